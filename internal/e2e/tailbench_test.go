package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/procstat"
	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
	"github.com/pagewatch/pagewatch/pipeline/tail"
)

// BenchmarkTailProcess runs the built `ingest tail`, with its default
// batch settings, as a process against the harness's NATS (file
// storage), reading a log written beforehand: the real log repeated to
// PAGEWATCH_TAIL_BENCH_LINES lines (5,000,000). It reports lines/s from
// the start of the process until the stream holds every line (read from
// the messages' headers), the process's peak RSS (VmHWM), and CPU-seconds
// per million lines of the tailer and of this test process, which is
// mostly the NATS server. "filters=off" turns the page filters off, as
// the e2e harness does, so every line is a hit; "filters=default" keeps
// them, as a site would.
func BenchmarkTailProcess(b *testing.B) {
	want := envInt(b, "PAGEWATCH_TAIL_BENCH_LINES", 5_000_000)
	dir := b.TempDir()
	log := filepath.Join(dir, "access.log")
	lines := writeRepeated(b, log, want)
	st, err := os.Stat(log)
	if err != nil {
		b.Fatal(err)
	}
	warm := filepath.Join(dir, "warm.log")
	warmLines := writeRepeated(b, warm, want/5)
	warmSt, err := os.Stat(warm)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, pages string }{
		{"filters=off", "\n    pages: {methods: [], statuses: [], static_extensions: [], bots: [], count_classes: []}"},
		{"filters=default", ""},
	} {
		b.Run(tc.name, func(b *testing.B) {
			bb := &bundle{dir: b.TempDir(), bin: binaries(b), starts: map[string]int{}}
			bb.nats = natstest.Start(b)
			nb := natsBus(b, bb.natsURL())
			// A NATS server that has run a while has its memory: without
			// this round, the first one measures the server's start too.
			tailRun(b, bb, nb, warm, "warm", tc.pages).wait(b, warmSt.Size(), warmLines)
			b.ResetTimer()
			var elapsed, tailCPU, natsCPU time.Duration
			var rss int64
			for i := 0; i < b.N; i++ {
				// A path and instance of its own per round: the lease
				// and the subject are the file's path's.
				r := tailRun(b, bb, nb, log, strconv.Itoa(i), tc.pages)
				e, tcpu, ncpu, hwm := r.wait(b, st.Size(), lines)
				elapsed, tailCPU, natsCPU = elapsed+e, tailCPU+tcpu, natsCPU+ncpu
				rss = max(rss, hwm)
			}
			total := float64(b.N * lines)
			b.ReportMetric(total/elapsed.Seconds(), "lines/s")
			b.ReportMetric(float64(rss)/(1<<20), "MB-peak-RSS")
			b.ReportMetric(tailCPU.Seconds()/total*1e6, "tail-cpu-s/Mlines")
			b.ReportMetric(natsCPU.Seconds()/total*1e6, "nats-cpu-s/Mlines")
		})
	}
}

// writeRepeated writes the real log to path, repeated to at least n
// lines, and returns the lines written.
func writeRepeated(b *testing.B, path string, n int) int {
	var chunk []byte
	realLines := realdata.Lines(b, realdata.ApacheLog)
	for _, l := range realLines {
		chunk = append(chunk, l...)
		chunk = append(chunk, '\n')
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	lines := 0
	for lines < n {
		if _, err := f.Write(chunk); err != nil {
			b.Fatal(err)
		}
		lines += len(realLines)
	}
	// On disk before the clock starts: writing 1 GB back would otherwise
	// compete with the run.
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	return lines
}

type tailRound struct {
	p     *proc
	start time.Time
	cpu0  time.Duration // this process's CPU at start
	cons  jetstream.MessagesContext
}

// tailRun starts `ingest tail` on a link to log of its own, for the round
// named round.
func tailRun(b *testing.B, bb *bundle, nb *bus.Bus, log, round, pages string) *tailRound {
	path := filepath.Join(bb.dir, "access-"+round+".log")
	if err := os.Link(log, path); err != nil {
		b.Fatal(err)
	}
	instance := "bench" + round
	bb.config = filepath.Join(bb.dir, instance+".yaml")
	cfg := fmt.Sprintf(`log: {level: info}
nats: {url: %q}
ingest:
  tail:
    listen: "127.0.0.1:0"
    instance: %s
    inputs: [{path: %q, site: example.com}]
    start_at: beginning%s
`, bb.natsURL(), instance, path, pages)
	if err := os.WriteFile(bb.config, []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	stream, err := nb.HitsStream(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	subject := nb.HitsSubject(instance, bus.Key(path))
	// Headers only: fetching whole batches would cost the server more
	// than storing them.
	cons, err := stream.OrderedConsumer(context.Background(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject}, HeadersOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		b.Fatal(err)
	}
	r := &tailRound{cons: it, cpu0: procstat.SelfCPU()}
	r.start = time.Now()
	r.p = bb.start(b, "ingest", "tail")
	return r
}

// wait waits until the subject's messages cover the file (end bytes,
// lines lines), then stops the tailer. It returns the time from the
// start, the CPU the tailer and this process took, and the tailer's
// peak RSS in bytes.
func (r *tailRound) wait(b *testing.B, end int64, lines int) (time.Duration, time.Duration, time.Duration, int64) {
	defer r.cons.Stop()
	got := 0
	for {
		// A tailer that stalls fails the benchmark rather than hanging it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		m, err := r.cons.Next(jetstream.NextContext(ctx))
		cancel()
		if err != nil {
			b.Fatalf("waiting for the tailer's messages (%d lines so far): %v", got, err)
		}
		n, _ := strconv.Atoi(m.Headers().Get(tail.HeaderLines))
		got += n
		if m.Headers().Get(tail.HeaderEnd) == strconv.FormatInt(end, 10) {
			break
		}
	}
	elapsed := time.Since(r.start)
	natsCPU := procstat.SelfCPU() - r.cpu0
	if got != lines {
		b.Fatalf("the stream's messages hold %d lines, want %d", got, lines)
	}
	pid := r.p.cmd.Process.Pid
	tailCPU := procstat.CPU(b, pid)
	hwm := procstat.StatusBytes(b, pid, "VmHWM")
	r.p.stop(b)
	return elapsed, tailCPU, natsCPU, hwm
}

// natsBus connects to NATS for the benchmark's own look at the stream.
func natsBus(b *testing.B, url string) *bus.Bus {
	cfg := bus.DefaultConfig()
	cfg.URL = url
	nb, err := bus.Connect(context.Background(), cfg, "tailbench", slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nb.Close)
	return nb
}
