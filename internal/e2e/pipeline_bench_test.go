package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/procstat"
	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
)

// BenchmarkTailToClickHouse runs the built `ingest tail` and `ingest load`
// as processes, with their default batch settings, against real NATS
// (file storage) and ClickHouse on this machine, while it appends the real
// log to the tailed file, restamped with the current time, at up to
// PAGEWATCH_BENCH_RATE lines/s (650,000: above the 500k goal, so that the
// writer's cap is not what is measured) for PAGEWATCH_BENCH_SECONDS (10;
// `make bench` uses 60). The loader inserts over HTTP, compressed as
// PAGEWATCH_BENCH_HTTP_COMPRESSION says (lz4, or none), in batches of up
// to PAGEWATCH_BENCH_BATCH_ROWS hits (ingest.load.batch_rows: 100,000, the
// default). It reports lines/s from the first write until
// ClickHouse holds every line, the rate the writer kept up, and the
// largest backlog (lines written, not yet in ClickHouse) seen, and the CPU
// time per million lines of each process: the tailer, the loader,
// clickhouse-server and this one (NATS and the writer).
func BenchmarkTailToClickHouse(b *testing.B) {
	seconds := envInt(b, "PAGEWATCH_BENCH_SECONDS", 10)
	rate := envInt(b, "PAGEWATCH_BENCH_RATE", 650_000)
	batchRows := envInt(b, "PAGEWATCH_BENCH_BATCH_ROWS", 100_000)
	compression := os.Getenv("PAGEWATCH_BENCH_HTTP_COMPRESSION")
	if compression == "" {
		compression = "lz4"
	}
	bb := &bundle{dir: b.TempDir(), bin: binaries(b), starts: map[string]int{}}
	bb.nats = natstest.Start(b)
	bb.ch = clickhousetest.Start(b)
	bb.log = filepath.Join(bb.dir, "access.log")
	bb.config = filepath.Join(bb.dir, "pagewatch.yaml")
	cfg := fmt.Sprintf(`log: {level: info}
nats: {url: %q}
clickhouse: {addr: [%q], http_addr: [%q], http_compression: %s}
ingest:
  tail:
    listen: "127.0.0.1:0"
    instance: bench
    inputs: [{path: %q, site: example.com}]
    # Every line a hit, so rows loaded can be compared with lines written.
    pages: {methods: [], statuses: [], static_extensions: [], bots: [], count_classes: []}
    start_at: beginning
  load:
    listen: "127.0.0.1:0"
    batch_rows: %d
    retention: {raw_hits_days: 0}
`, bb.natsURL(), bb.ch.Addr, bb.ch.HTTPAddr, compression, bb.log, batchRows)
	if err := os.WriteFile(bb.config, []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(bb.log, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	chunk, stamps := stampableChunk(b)
	linesPerChunk := len(stamps)
	f, err := os.OpenFile(bb.log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()

	tailer := bb.start(b, "ingest", "tail")
	loader := bb.start(b, "ingest", "load")
	admin := loader.adminAddr(b)
	chPID := bb.ch.PID()
	pids := []int{tailer.cmd.Process.Pid, loader.cmd.Process.Pid, chPID, os.Getpid()}
	cpu0 := make([]time.Duration, len(pids))
	for i, pid := range pids {
		cpu0[i] = procstat.CPU(b, pid)
	}
	b.ResetTimer()

	start := time.Now()
	written, maxLag := 0, 0
	nextSample := start.Add(time.Second)
	for time.Since(start) < time.Duration(seconds)*time.Second {
		now := time.Now()
		stamp := now.UTC().Format("02/Jan/2006:15:04:05")
		for _, at := range stamps {
			copy(chunk[at:], stamp)
		}
		if _, err := f.Write(chunk); err != nil {
			b.Fatal(err)
		}
		written += linesPerChunk
		if now.After(nextSample) {
			loaded := int(metric(b, admin, "pagewatch_ingest_load_rows_total"))
			maxLag = max(maxLag, written-loaded)
			nextSample = now.Add(time.Second)
		}
		if ahead := time.Duration(float64(written)/float64(rate)*float64(time.Second)) - time.Since(start); ahead > 0 {
			time.Sleep(ahead)
		}
	}
	writing := time.Since(start)
	for int(metric(b, admin, "pagewatch_ingest_load_rows_total")) < written {
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	mlines := float64(written) / 1e6
	for i, unit := range []string{"tail-cpu-s/Mlines", "loader-cpu-s/Mlines", "clickhouse-cpu-s/Mlines", "nats-writer-cpu-s/Mlines"} {
		b.ReportMetric((procstat.CPU(b, pids[i])-cpu0[i]).Seconds()/mlines, unit)
	}
	b.ReportMetric(float64(written)/elapsed.Seconds(), "lines/s")
	b.ReportMetric(float64(written)/writing.Seconds(), "written-lines/s")
	b.ReportMetric(float64(maxLag), "max-backlog-lines")
	b.ReportMetric(float64(procstat.StatusBytes(b, pids[1], "VmHWM"))/(1<<20), "loader-peak-rss-MB")
	// Logged as well, so that a failed check below does not lose them.
	b.Logf("%d lines written in %s (%.0f/s), all in ClickHouse after %s (%.0f lines/s), in %.0f inserts; %s active parts of hits",
		written, writing.Round(time.Millisecond), float64(written)/writing.Seconds(), elapsed.Round(time.Millisecond), float64(written)/elapsed.Seconds(),
		metric(b, admin, "pagewatch_ingest_load_batches_total"), strings.TrimSpace(bb.ch.Query(b, "SELECT count() FROM system.parts WHERE active AND table = 'hits'")))
	if got := distinctHits(b, bb); got != written {
		b.Fatalf("ClickHouse holds %d distinct hits for %d lines", got, written)
	}
}

// distinctHits counts the distinct event ids in the hits table an eighth
// at a time: the test server's 2 GB per query did not hold one GROUP BY of
// 36M (600k lines/s for 60 s).
func distinctHits(b *testing.B, bb *bundle) int {
	n := 0
	for k := range 8 {
		out := strings.TrimSpace(bb.ch.Query(b, fmt.Sprintf("SELECT count() FROM (SELECT seq, line_offset FROM pagewatch.hits WHERE intHash64(line_offset) %% 8 = %d GROUP BY seq, line_offset)", k)))
		c, err := strconv.Atoi(out)
		if err != nil {
			b.Fatalf("count: %q", out)
		}
		n += c
	}
	return n
}

// stampableChunk is the real log as one write, with the offset of each
// line's time ("17/May/2015:10:05:03") so it can be restamped in place.
func stampableChunk(b *testing.B) ([]byte, []int) {
	var chunk []byte
	var stamps []int
	for _, l := range realdata.Lines(b, realdata.ApacheLog) {
		i := bytes.IndexByte(l, '[')
		if i < 0 || len(l) < i+21 {
			b.Fatalf("line without a time: %q", l)
		}
		stamps = append(stamps, len(chunk)+i+1)
		chunk = append(chunk, l...)
		chunk = append(chunk, '\n')
	}
	return chunk, stamps
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s: want a positive integer, got %q", name, v)
	}
	return n
}
