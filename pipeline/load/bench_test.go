package load_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/pipeline/load"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
	"github.com/pagewatch/pagewatch/pipeline/pageview"
)

// BenchmarkJetStreamToClickHouse measures loaders moving 1,000,000 hits
// from JetStream (file storage) into ClickHouse 18.16 until every one is
// counted: raw rows and per-minute counts. The hits are the real log's
// paths and referrers in order, 5,000 per message as ingest tail sends
// them, timed as a busy site would see them: 100,000 hits a minute. Each
// loader has its own NATS connection and ClickHouse client, like a
// separate process.
func BenchmarkJetStreamToClickHouse(b *testing.B) {
	for _, c := range []struct{ loaders, inserts int }{{1, 1}, {1, 2}, {2, 2}, {3, 2}} {
		b.Run(fmt.Sprintf("loaders=%d/inserts=%d", c.loaders, c.inserts), func(b *testing.B) { benchLoad(b, c.loaders, c.inserts, 1_000_000) })
	}
}

func benchLoad(b *testing.B, loaders, inserts, total int) {
	bb := benchSetup(b)
	cpu := cpuSampler{natsPID: bb.natsPID, chPID: bb.chSrv.PID()}
	bb.cfg.Inserts = inserts
	bb.cfg.BatchRows = 100_000
	bb.cfg.BatchAge = time.Second
	bb.cfg.AckWait = 30 * time.Second
	ctx := context.Background()
	msgs, counted := benchMessages(b, total, 5000, 100_000)
	quiet := testenv.Logger(b)
	b.ResetTimer()
	var loaded time.Duration
	var used cpuSplit
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		publishAsync(b, bb, msgs, i)
		b.StartTimer()
		start := time.Now()
		cpu0 := cpu.sample(b)
		var stops []func()
		var regs []*prometheus.Registry
		for j := 0; j < loaders; j++ {
			nb := testenv.NATSClient(b, bb.natsURL, quiet)
			ch := clickHouseClient(b, bb.chSrv, quiet)
			reg := prometheus.NewRegistry()
			regs = append(regs, reg)
			l, err := load.New(bb.cfg, load.Deps{Bus: nb, Store: ch.Hits(), Logger: quiet, Registry: reg})
			if err != nil {
				b.Fatal(err)
			}
			stops = append(stops, runLoader(b, l))
		}
		want := uint64(counted * (i + 1)) // the hits table holds page views only
		// Polling ClickHouse would compete with the loaders (18.16 reads a
		// column for count()), so the clock stops when the loaders' own
		// row counters say everything is in; the exact distinct count is
		// then checked off the clock.
		for loadedRows(regs) < float64(total) {
			time.Sleep(5 * time.Millisecond)
		}
		loaded += time.Since(start)
		d := cpu.sample(b).since(cpu0)
		used = cpuSplit{self: used.self + d.self, nats: used.nats + d.nats, ch: used.ch + d.ch}
		b.StopTimer()
		b.Logf("CPU: loaders %s, NATS %s, ClickHouse %s, wall %s", d.self.Round(time.Millisecond), d.nats.Round(time.Millisecond), d.ch.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		if n, err := bb.ch.Hits().HitCount(ctx); err != nil || n != want {
			b.Fatalf("distinct hits %d (%v), want %d", n, err, want)
		}
		for _, stop := range stops {
			stop()
		}
		for j, reg := range regs {
			mfs, _ := reg.Gather()
			for _, mf := range mfs {
				switch mf.GetName() {
				case "pagewatch_ingest_load_insert_duration_seconds", "pagewatch_ingest_load_batch_rows":
					h := mf.GetMetric()[0].GetHistogram()
					b.Logf("loader %d: %s count %d mean %.3f", j, mf.GetName(), h.GetSampleCount(), h.GetSampleSum()/float64(h.GetSampleCount()))
				}
			}
		}
	}
	b.ReportMetric(float64(total*b.N)/loaded.Seconds(), "rows/s")
	mrows := float64(total*b.N) / 1e6
	b.ReportMetric(used.self.Seconds()/mrows, "loader-cpu-s/Mrows")
	b.ReportMetric(used.nats.Seconds()/mrows, "nats-cpu-s/Mrows")
	b.ReportMetric(used.ch.Seconds()/mrows, "clickhouse-cpu-s/Mrows")
}

// benchSetup is setup with NATS in a child process, so that this
// process's CPU time is the loaders' alone.
func benchSetup(b *testing.B) *bundle {
	logger := testenv.Logger(b)
	url, pid := startNATSChild(b)
	c, srv := clickHouse(b, logger)
	cfg := load.DefaultConfig()
	return &bundle{bus: testenv.NATSClient(b, url, logger), natsURL: url, natsPID: pid, ch: c, chSrv: srv, cfg: cfg, logger: logger}
}

// benchMessages encodes total real hits into messages of per hits, with
// timestamps advancing perMinute hits a minute, and returns how many of
// them are counted as views.
func benchMessages(b *testing.B, total, per, perMinute int) ([][]byte, int) {
	lines := realdata.Lines(b, realdata.ApacheLog)
	pages, err := pageview.New(pageview.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	classes := pages.Classifier().NewCache(0)
	var e logformat.Entry
	var enc hit.Encoder
	var msgs [][]byte
	counted := 0
	base := time.Now().UTC().Add(-time.Duration(total/perMinute+1) * time.Minute).Truncate(time.Minute)
	for i := 0; i < total; i++ {
		if err := logformat.Parse(lines[i%len(lines)], &e); err != nil {
			b.Fatal(err)
		}
		at := base.Add(time.Duration(i) * time.Minute / time.Duration(perMinute))
		// Each hit as a tailer sends it: its client's class, counted or
		// not by the default classes, and a client key of its address and
		// user agent (a plain hash here: the salt is not what is measured).
		class := classes.Class(e.UserAgent)
		key := fnv.New64a()
		key.Write(e.Client)
		key.Write(e.UserAgent)
		h := hit.Hit{Time: at, Site: "example.com", Path: string(e.Target), Method: string(e.Method),
			Status: uint16(e.Status), Referer: string(e.Referer), Offset: uint64(i) * 200,
			Class: class, Uncounted: !pages.Counts(class)}
		if pages.Counts(class) {
			h.Client = key.Sum64() | 1 // as the tailer, which keys views only
			counted++
		}
		enc.Add(&h)
		if enc.Len() == per || i == total-1 {
			msgs = append(msgs, append([]byte(nil), enc.Bytes()...))
			enc.Reset()
		}
	}
	return msgs, counted
}

// publishAsync publishes msgs with up to 256 acks in flight; round keeps
// the subjects of different rounds apart.
func publishAsync(b *testing.B, bb *bundle, msgs [][]byte, round int) {
	ctx := context.Background()
	if _, err := bb.bus.HitsStream(ctx); err != nil {
		b.Fatal(err)
	}
	var acks []jetstream.PubAckFuture
	for j, data := range msgs {
		m := nats.NewMsg(bb.bus.HitsSubject("bench", fmt.Sprintf("r%df%d", round, j%8)))
		m.Data = data
		// The headers ingest tail sets, so the loader derives the hits'
		// event ids and the messages' keys as in production (hit.Keys).
		m.Header.Set(hit.HeaderSource, fmt.Sprintf("bench/r%d/access%d.log", round, j%8))
		m.Header.Set(hit.HeaderFile, fmt.Sprintf("64768:%d:1024:%016x", j%8, round*8+j%8))
		m.Header.Set(hit.HeaderStart, fmt.Sprint(j))
		m.Header.Set(hit.HeaderEnd, fmt.Sprint(j+1))
		f, err := bb.bus.JS.PublishMsgAsync(m, jetstream.WithStallWait(time.Minute))
		if err != nil {
			b.Fatal(err)
		}
		acks = append(acks, f)
	}
	for _, f := range acks {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			b.Fatal(err)
		}
	}
}

// loadedRows sums pagewatch_ingest_load_rows_total over the loaders.
func loadedRows(regs []*prometheus.Registry) float64 {
	var sum float64
	for _, reg := range regs {
		mfs, _ := reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() == "pagewatch_ingest_load_rows_total" {
				sum += mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
	}
	return sum
}
