package tail_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/pipeline/tail"
)

// BenchmarkTailToJetStream measures ingest tail end to end within one
// process: read, parse, encode and publish (with JetStream acks, file
// store) 200,000 real log lines. The NATS server runs in the same process,
// so cpu-s/Mlines is the tailer's and the server's CPU together.
func BenchmarkTailToJetStream(b *testing.B) {
	bb := setup(b)
	def := tail.DefaultConfig()
	bb.cfg.BatchLines, bb.cfg.BatchBytes = def.BatchLines, def.BatchBytes
	var all [][]byte
	for len(all) < 200_000 {
		all = append(all, bb.lines...)
	}
	writeLines(b, bb.log, all, true)
	st, err := os.Stat(bb.log)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	stream, err := bb.bus.HitsStream(ctx)
	if err != nil {
		b.Fatal(err)
	}
	end := strconv.FormatInt(st.Size(), 10)
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		// Each round is a new tailer instance reading the log from the
		// start, under a path of its own: a second instance on the same
		// path would take over the first one's subject and position.
		b.StopTimer()
		path := filepath.Join(bb.dir, "bench"+strconv.Itoa(i)+".log")
		if err := os.Link(bb.log, path); err != nil {
			b.Fatal(err)
		}
		bb.cfg.Instance = "bench" + strconv.Itoa(i)
		bb.cfg.Inputs = []tail.Input{{Path: path, Site: "example.com"}}
		subject := bb.bus.HitsSubject(bb.cfg.Instance, bus.Key(path))
		b.StartTimer()
		stop := bb.start(b)
		waitEnd(b, stream, subject, end)
		stop()
	}
	elapsed := time.Since(start).Seconds()
	cpu := (cpuTime() - cpu0).Seconds()
	lines := float64(b.N * len(all))
	b.ReportMetric(lines/elapsed, "lines/s")
	b.ReportMetric(float64(b.N)*float64(st.Size())/elapsed/1e6, "MB/s")
	b.ReportMetric(cpu/lines*1e6, "cpu-s/Mlines")
}

// waitEnd waits until subject has a message ending at end. It reads
// the messages' headers only: fetching whole batches to look at their
// position would cost the server more than storing them.
func waitEnd(b *testing.B, stream jetstream.Stream, subject, end string) {
	ctx := context.Background()
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject}, HeadersOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		b.Fatal(err)
	}
	defer it.Stop()
	for {
		m, err := it.Next()
		if err != nil {
			b.Fatal(err)
		}
		if m.Headers().Get(tail.HeaderEnd) == end {
			return
		}
	}
}

// cpuTime is the CPU this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
