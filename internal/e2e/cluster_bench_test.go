package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/procstat"
	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/internal/testserver/chcluster"
	"github.com/pagewatch/pagewatch/internal/testserver/natscluster"
	"github.com/pagewatch/pagewatch/pipeline/load"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
)

// The scaling benchmarks run 1, 2 and 3 loaders, and 1, 2 and 4 workers,
// as processes against a 3-node NATS cluster (replicas 3), ClickHouse and
// an SMTP server on this machine, and report what each part spent in CPU
// time (user + system, from /proc) per million rows or per thousand
// mails: the figures docs/scaling.md's model is built from. Each round
// works off a backlog published beforehand, so rows/s is the capacity of
// that many processes here, not a traffic rate. On a 2-core machine that
// other work shares, CPU-seconds per unit are the stable figures; rows/s
// and mails/s move with whatever else runs.

// clusterBench is the cluster, ClickHouse and SMTP server the rounds of
// one benchmark share, so only the first round pays for creating the
// streams and buckets at replicas 3.
type clusterBench struct {
	b  *bundle
	cl *natscluster.Cluster
	ch *chcluster.Cluster // nil: one clickhouse-server
	nb *bus.Bus
}

// newClusterBench starts the servers; ch, when set, is the ClickHouse
// cluster the daemons use in cluster mode.
func newClusterBench(tb *testing.B, ch *chcluster.Cluster) *clusterBench {
	cl := natscluster.Start(tb, 3, natscluster.Build(tb, binaries(tb)))
	b := setupWith(tb, setupOptions{rules: "    []", load: bigLoad, cluster: cl, chCluster: ch,
		worker: workerConfig{LockTTL: "5s", DeferDelay: "200ms", AckWait: "30s", DrainTimeout: "5s", NoRateLimit: true}})
	cfg := bus.DefaultConfig()
	cfg.URL, cfg.Replicas = cl.URL, len(cl.Nodes)
	nb, err := bus.Connect(context.Background(), cfg, "e2e bench publisher", slog.New(slog.DiscardHandler))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nb.Close)
	return &clusterBench{b: b, cl: cl, ch: ch, nb: nb}
}

// cpuMeter reads the CPU time of a set of processes by part.
type cpuMeter struct {
	pids  map[string][]int
	start map[string]time.Duration
	// natsStart is each nats-server's own CPU time at the start.
	natsStart []time.Duration
	self      time.Duration
	began     time.Time
}

func (c *clusterBench) meter(tb *testing.B, parts map[string][]int) *cpuMeter {
	parts["nats-server"] = nil
	for _, nd := range c.cl.Nodes {
		parts["nats-server"] = append(parts["nats-server"], nd.PID())
	}
	if c.ch == nil {
		parts["clickhouse-server"] = []int{c.b.ch.PID()}
	} else {
		for _, n := range c.ch.Nodes {
			parts["clickhouse-server"] = append(parts["clickhouse-server"], n.PID())
		}
		parts["zookeeper"] = []int{procstat.Find(tb, c.ch.ZooKeeper.Dir, "java")}
	}
	m := &cpuMeter{pids: parts, start: map[string]time.Duration{}}
	for part := range parts {
		m.start[part] = m.cpu(tb, part)
	}
	for _, pid := range parts["nats-server"] {
		m.natsStart = append(m.natsStart, procstat.CPU(tb, pid))
	}
	m.self, m.began = procstat.SelfCPU(), time.Now()
	return m
}

func (m *cpuMeter) cpu(tb *testing.B, part string) time.Duration {
	var d time.Duration
	for _, pid := range m.pids[part] {
		d += procstat.CPU(tb, pid)
	}
	return d
}

// report puts each part's CPU seconds per unit (units of work done) in
// the benchmark's metrics, and what share of the machine's cores all of
// them, this process included, kept busy.
func (m *cpuMeter) report(tb *testing.B, units float64, unit string) {
	wall := time.Since(m.began)
	var all time.Duration
	for part := range m.pids {
		d := m.cpu(tb, part) - m.start[part]
		all += d
		tb.ReportMetric(d.Seconds()/units, part+"-cpu-s/"+unit)
	}
	all += procstat.SelfCPU() - m.self
	tb.ReportMetric(100*all.Seconds()/wall.Seconds()/float64(runtime.NumCPU()), "machine-busy-%")
	// The stream's leader works hardest: the node that limits a stream.
	var busiest time.Duration
	for i, pid := range m.pids["nats-server"] {
		busiest = max(busiest, procstat.CPU(tb, pid)-m.natsStart[i])
	}
	tb.ReportMetric(busiest.Seconds()/units, "nats-busiest-node-cpu-s/"+unit)
	// How many runnable tasks the machine had: what else competed for it.
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(data)); len(f) > 0 {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				tb.ReportMetric(v, "loadavg-1m")
			}
		}
	}
}

// benchHits is the real log as hits, each pass with its own offsets.
func benchHits(tb *testing.B) []hit.Hit {
	var e logformat.Entry
	var out []hit.Hit
	for i, l := range realdata.Lines(tb, realdata.ApacheLog) {
		if err := logformat.Parse(l, &e); err != nil {
			tb.Fatalf("real log line %d: %v", i+1, err)
		}
		path, _ := pagePath(e.Target)
		out = append(out, hit.Hit{Site: site, Path: path, Method: string(e.Method), Status: uint16(e.Status),
			Referer: string(e.Referer), Time: e.Time, Bytes: uint64(max(e.Bytes, 0)),
			Offset: uint64(i)})
	}
	return out
}

// publishHits puts n hits on a subject of their own, cut into messages as
// the tailer cuts them, and waits for every publish to be stored.
func (c *clusterBench) publishHits(tb *testing.B, subject string, hits []hit.Hit, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var enc hit.Encoder
	var futures []jetstream.PubAckFuture
	msgs := 0
	flush := func() {
		m := nats.NewMsg(subject)
		m.Data = append([]byte(nil), enc.Bytes()...)
		f, err := c.nb.JS.PublishMsgAsync(m, jetstream.WithMsgID(subject+"-"+strconv.Itoa(msgs)))
		if err != nil {
			tb.Fatal(err)
		}
		futures = append(futures, f)
		msgs++
		enc.Reset()
		if len(futures) >= 64 {
			for _, f := range futures {
				select {
				case <-f.Ok():
				case err := <-f.Err():
					tb.Fatal(err)
				case <-ctx.Done():
					tb.Fatal(ctx.Err())
				}
			}
			futures = futures[:0]
		}
	}
	for g := range n {
		h := hits[g%len(hits)]
		h.Offset = uint64(g)
		enc.Add(&h)
		if enc.Len() >= tailerBatchLines || enc.Size() >= tailerBatchFull {
			flush()
		}
	}
	if enc.Len() > 0 {
		flush()
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			tb.Fatal(err)
		}
	}
}

// rowsIn is count() of hits: every row inserted, a batch loaded twice
// twice until merged.
func rowsIn(tb *testing.B, b *bundle) int {
	out := strings.TrimSpace(b.ch.Query(tb, "SELECT count() FROM pagewatch.hits"))
	n, err := strconv.Atoi(out)
	if err != nil {
		tb.Fatalf("count: %q", out)
	}
	return n
}

// drained reports whether the loaders' consumer has nothing left to
// deliver or to have acknowledged.
func (c *clusterBench) drained(ctx context.Context) bool {
	cons, err := c.nb.JS.Consumer(ctx, c.nb.HitsStreamName(), load.DefaultConfig().Consumer)
	if err != nil {
		return false
	}
	info, err := cons.Info(ctx)
	return err == nil && info.NumPending == 0 && info.NumAckPending == 0
}

// BenchmarkClusterLoaders loads PAGEWATCH_BENCH_ROWS (1,000,000) real hits
// a round with 1, 2 and 3 `ingest load` processes, from a backlog in the
// cluster's R3 hits stream into ClickHouse, and reports rows/s and the
// CPU seconds per million rows of the loaders, the three nats-servers
// and clickhouse-server.
func BenchmarkClusterLoaders(tb *testing.B) { benchLoaders(tb, nil) }

// BenchmarkClusterLoadersReplicated is BenchmarkClusterLoaders into a
// ClickHouse cluster of 2 shards × 2 replicas on ZooKeeper, in cluster
// mode (Distributed inserts into ReplicatedMergeTree tables); the
// clickhouse-server figure sums the four servers, and ZooKeeper's is
// reported too.
func BenchmarkClusterLoadersReplicated(tb *testing.B) {
	benchLoaders(tb, chcluster.Start(tb, chcluster.Options{Shards: 2, Replicas: 2}))
}

func benchLoaders(tb *testing.B, ch *chcluster.Cluster) {
	rows := envInt(tb, "PAGEWATCH_BENCH_ROWS", 1_000_000)
	c := newClusterBench(tb, ch)
	hits := benchHits(tb)
	if _, err := c.nb.HitsStream(context.Background()); err != nil {
		tb.Fatal(err)
	}
	total, round := 0, 0
	for _, n := range []int{1, 2, 3} {
		tb.Run(fmt.Sprintf("loaders=%d", n), func(tb *testing.B) {
			// A subject per run: the benchmark may be run again (a short
			// run under -benchtime), and the stream would drop the same
			// message IDs as duplicates.
			round++
			subject := c.nb.HitsSubject("bench", fmt.Sprintf("loaders%d-%d", n, round))
			// What storing the backlog costs the cluster: the ingest side of
			// NATS (the tailers' publishes, here the test's own).
			var natsPIDs []int
			for _, nd := range c.cl.Nodes {
				natsPIDs = append(natsPIDs, nd.PID())
			}
			natsCPU := func() (sum time.Duration, each []time.Duration) {
				for _, pid := range natsPIDs {
					d := procstat.CPU(tb, pid)
					each = append(each, d)
					sum += d
				}
				return sum, each
			}
			before, each0 := natsCPU()
			c.publishHits(tb, subject, hits, rows)
			after, each1 := natsCPU()
			var busiest time.Duration
			for i := range each1 {
				busiest = max(busiest, each1[i]-each0[i])
			}
			total += rows
			procs := map[string][]int{}
			loaders := make([]*proc, n)
			for i := range loaders {
				loaders[i] = c.b.start(tb, "ingest", "load")
				procs["loader"] = append(procs["loader"], loaders[i].cmd.Process.Pid)
			}
			m := c.meter(tb, procs)
			tb.ResetTimer()
			ctx := context.Background()
			// Progress from the loaders' own counters: a count in
			// ClickHouse now and then would be ClickHouse CPU measured too.
			var addrs []string
			for _, l := range loaders {
				addrs = append(addrs, l.adminAddr(tb))
			}
			loaded := func() int {
				n := 0
				for _, a := range addrs {
					if v, ok := scrapeOne(tb, a, "pagewatch_ingest_load_rows_total"); ok {
						n += int(v)
					}
				}
				return n
			}
			var first time.Time
			for loaded() < rows || !c.drained(ctx) {
				if first.IsZero() && loaded() > 0 {
					first = time.Now()
				}
				time.Sleep(50 * time.Millisecond)
			}
			// In cluster mode a Distributed insert is forwarded to its shard
			// after the insert returns: the rows are loaded once every shard
			// holds them (count() is cheap; the exact check comes after).
			acked := time.Now()
			deadline := acked.Add(2 * time.Minute)
			for rowsIn(tb, c.b) < total {
				if time.Now().After(deadline) {
					tb.Fatalf("ClickHouse holds %d rows 2 minutes after the loaders acknowledged all %d", rowsIn(tb, c.b), total)
				}
				time.Sleep(200 * time.Millisecond)
			}
			end := time.Now()
			tb.StopTimer()
			tb.ReportMetric(end.Sub(acked).Seconds(), "forward-lag-s")
			if first.IsZero() {
				first = m.began
			}
			took, steady := end.Sub(m.began), end.Sub(first)
			m.report(tb, float64(rows)/1e6, "Mrows")
			tb.ReportMetric((after-before).Seconds()/(float64(rows)/1e6), "nats-publish-cpu-s/Mrows")
			tb.ReportMetric(busiest.Seconds()/(float64(rows)/1e6), "nats-publish-busiest-node-cpu-s/Mrows")
			tb.ReportMetric(float64(rows)/took.Seconds(), "rows/s")
			// Without the loaders' start-up: from the first rows loaded.
			tb.ReportMetric(float64(rows)/steady.Seconds(), "steady-rows/s")
			// Exact, once the measuring is over (the count is ClickHouse
			// CPU too); a batch loaded twice made count() reach the total
			// early, so the last forwarded rows may still be on their way.
			for c.b.hitCount(tb) < total && time.Now().Before(deadline) {
				time.Sleep(500 * time.Millisecond)
			}
			if got := c.b.hitCount(tb); got != total {
				tb.Fatalf("ClickHouse holds %d distinct hits, %d were published", got, total)
			}
			for _, l := range loaders {
				l.stop(tb)
			}
			tb.Logf("%d loaders: %d rows from the stream into ClickHouse in %s (start-up included), %s from the first rows loaded", n, rows, took.Round(time.Millisecond), steady.Round(time.Millisecond))
		})
	}
}

// BenchmarkClusterWorkers mails PAGEWATCH_BENCH_MAILS (2,000) crossings of
// 200 pages a round with 1, 2 and 4 `worker run` processes (their default
// concurrency, rate limits off) to an SMTP server on loopback, the jobs
// published as the sweeper would while the workers run, and reports
// mails/s and the CPU seconds per thousand mails of the workers, the
// three nats-servers and clickhouse-server (the history the workers
// write).
func BenchmarkClusterWorkers(tb *testing.B) {
	mails := envInt(tb, "PAGEWATCH_BENCH_MAILS", 2000)
	const pages = 200
	c := newClusterBench(tb, nil)
	round := 0
	for _, n := range []int{1, 2, 4} {
		tb.Run(fmt.Sprintf("workers=%d", n), func(tb *testing.B) {
			round++
			workers := make([]*proc, n)
			procs := map[string][]int{}
			for i := range workers {
				workers[i] = c.b.start(tb, "worker", "run")
				procs["worker"] = append(procs["worker"], workers[i].cmd.Process.Pid)
			}
			for _, w := range workers {
				addr := w.adminAddr(tb)
				for code, _ := readyz(addr); code != 200; code, _ = readyz(addr) {
					time.Sleep(100 * time.Millisecond)
				}
			}
			before := len(c.b.smtp.Messages())
			m := c.meter(tb, procs)
			tb.ResetTimer()
			var futures []jetstream.PubAckFuture
			for i := range mails {
				x := workerJob(i%pages, round*1_000_000+i/pages)
				body, err := x.Marshal()
				if err != nil {
					tb.Fatal(err)
				}
				msg := nats.NewMsg(c.nb.JobsSubject(bus.Key(x.Site, x.Path)))
				msg.Data = body
				f, err := c.nb.JS.PublishMsgAsync(msg, jetstream.WithMsgID(x.Key))
				if err != nil {
					tb.Fatal(err)
				}
				futures = append(futures, f)
			}
			for _, f := range futures {
				select {
				case <-f.Ok():
				case err := <-f.Err():
					tb.Fatal(err)
				}
			}
			deadline := time.Now().Add(5 * time.Minute)
			for len(c.b.smtp.Messages())-before < mails {
				if time.Now().After(deadline) {
					tb.Fatalf("%d of %d mails after 5 minutes", len(c.b.smtp.Messages())-before, mails)
				}
				time.Sleep(50 * time.Millisecond)
			}
			took := time.Since(m.began)
			tb.StopTimer()
			m.report(tb, float64(mails)/1e3, "kmails")
			tb.ReportMetric(float64(mails)/took.Seconds(), "mails/s")
			for _, w := range workers {
				w.stop(tb)
			}
			if got := len(c.b.smtp.Messages()) - before; got != mails {
				tb.Errorf("%d mails for %d crossings", got, mails)
			}
			tb.Logf("%d workers: %d crossings over %d pages mailed in %s", n, mails, pages, took.Round(time.Millisecond))
		})
	}
}
