package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/procstat"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/internal/testserver/natscluster"
)

// BenchmarkNATSSyncInterval measures what JetStream's sync_interval costs
// the ingest path: `ingest tail` and `ingest load` as processes, with
// their default batch settings, against nats-server processes (one
// standalone server, then a 3-node cluster with streams and buckets at
// replicas 3) and ClickHouse on this machine, while the real log is
// appended to the tailed file, restamped with the current time, at up to
// PAGEWATCH_BENCH_RATE lines/s (650,000) for PAGEWATCH_BENCH_SECONDS (10).
// Each shape runs with nats-server's default (sync_interval 2 min: a write
// is acknowledged once in the page cache, and a power cut loses what was
// not synced yet) and with `sync_interval: always` (every write is on
// disk before it is acknowledged). It reports the CPU seconds per
// million lines of the nats-server processes, the tailer, the loader and
// clickhouse-server, lines/s from the first write until ClickHouse holds
// every line, and the largest backlog seen.
func BenchmarkNATSSyncInterval(b *testing.B) {
	for _, shape := range []struct {
		name  string
		nodes int
	}{{"standalone", 1}, {"cluster", 3}} {
		for _, sync := range []string{"default", "always"} {
			b.Run(fmt.Sprintf("%s/sync=%s", shape.name, sync), func(b *testing.B) {
				js := ""
				if sync == "always" {
					js = "sync_interval: always"
				}
				benchSyncInterval(b, shape.nodes, js)
			})
		}
	}
}

func benchSyncInterval(b *testing.B, nodes int, jetstream string) {
	seconds := envInt(b, "PAGEWATCH_BENCH_SECONDS", 10)
	rate := envInt(b, "PAGEWATCH_BENCH_RATE", 650_000)
	cl := natscluster.StartWith(b, nodes, natscluster.Build(b, binaries(b)), natscluster.Options{Standalone: nodes == 1, JetStream: jetstream})
	bb := &bundle{dir: b.TempDir(), bin: binaries(b), starts: map[string]int{}, cluster: cl}
	bb.ch = clickhousetest.Start(b)
	bb.log = filepath.Join(bb.dir, "access.log")
	bb.config = filepath.Join(bb.dir, "pagewatch.yaml")
	cfg := fmt.Sprintf(`log: {level: info}
%s
clickhouse: {addr: [%q], http_addr: [%q]}
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
    retention: {raw_hits_days: 0}
`, bb.natsSection(), bb.ch.Addr, bb.ch.HTTPAddr, bb.log)
	if err := os.WriteFile(bb.config, []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(bb.log, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	chunk, stamps := stampableChunk(b)
	f, err := os.OpenFile(bb.log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()

	tailer := bb.start(b, "ingest", "tail")
	loader := bb.start(b, "ingest", "load")
	admin := loader.adminAddr(b)
	metric(b, admin, "pagewatch_ingest_load_rows_total") // the loader is up
	parts := map[string][]int{
		"nats-server":       nil,
		"tail":              {tailer.cmd.Process.Pid},
		"loader":            {loader.cmd.Process.Pid},
		"clickhouse-server": {bb.ch.PID()},
	}
	for _, nd := range cl.Nodes {
		parts["nats-server"] = append(parts["nats-server"], nd.PID())
	}
	cpu := func(part string) (d time.Duration) {
		for _, pid := range parts[part] {
			d += procstat.CPU(b, pid)
		}
		return d
	}
	cpu0 := map[string]time.Duration{}
	for part := range parts {
		cpu0[part] = cpu(part)
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
		written += len(stamps)
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
	var all time.Duration
	for part := range parts {
		d := cpu(part) - cpu0[part]
		all += d
		b.ReportMetric(d.Seconds()/mlines, part+"-cpu-s/Mlines")
	}
	b.ReportMetric(all.Seconds()/mlines, "all-cpu-s/Mlines")
	b.ReportMetric(float64(written)/elapsed.Seconds(), "lines/s")
	b.ReportMetric(float64(maxLag), "max-backlog-lines")
	what := "sync_interval default (2m)"
	if jetstream != "" {
		what = jetstream
	}
	b.Logf("%s, %d node(s): %d lines written in %s (%.0f/s), all in ClickHouse after %s (%.0f lines/s); largest backlog %d lines",
		what, nodes,
		written, writing.Round(time.Millisecond), float64(written)/writing.Seconds(), elapsed.Round(time.Millisecond), float64(written)/elapsed.Seconds(), maxLag)
	if got := distinctHits(b, bb); got != written {
		b.Fatalf("ClickHouse holds %d distinct hits for %d lines", got, written)
	}
}
