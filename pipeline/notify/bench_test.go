package notify_test

// Benchmarks for issue #6: how fast do the workers clear the backlog a
// queue holds after an outage, when many jobs for one page sit next to each
// other? Real pieces throughout: an embedded JetStream server, the real
// worker with its KV page leases, the real SMTP sender, and a real SMTP
// server that takes 20 ms per message. Only the notifications history is
// kept in memory (and rate limits are off), so neither ClickHouse nor the
// limits blur what is measured.
//
//	go test -run '^$' -bench Backlog -benchtime 1x ./pipeline/notify/
//
// By default the cases that finish within a minute together run; set
// PAGEWATCH_BENCH_FULL=1 for the rest (a few minutes more).

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/internal/testserver/smtptest"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

const benchSendDelay = 20 * time.Millisecond

type backlogCase struct {
	pages, perPage int
	procs, conc    int           // worker processes × worker.concurrency each
	deferDelay     time.Duration // worker.defer_delay; 0: the default
	full           bool          // only with PAGEWATCH_BENCH_FULL=1
}

func (c backlogCase) jobs() int { return c.pages * c.perPage }

func (c backlogCase) name() string {
	n := fmt.Sprintf("jobs=%d/pages=%d/workers=%dx%d", c.jobs(), c.pages, c.procs, c.conc)
	if c.deferDelay != 0 {
		n += "/defer=" + c.deferDelay.String()
	}
	return n
}

// ideal is the makespan of a perfect schedule: every slot busy sending,
// one send per page at a time. Per-page serialisation never binds here
// (a page's jobs take perPage × 20 ms, far below the total).
func (c backlogCase) ideal() time.Duration {
	slots := c.procs * c.conc
	total := time.Duration(c.jobs()) * benchSendDelay
	ideal := (total + time.Duration(slots) - 1) / time.Duration(slots)
	return max(ideal, time.Duration(c.perPage)*benchSendDelay)
}

func BenchmarkBacklog(b *testing.B) {
	full := os.Getenv("PAGEWATCH_BENCH_FULL") != ""
	type size struct{ pages, perPage int }
	outage, big, flat := size{100, 20}, size{1000, 10}, size{2000, 1}
	at := func(z size, procs, conc int) backlogCase {
		return backlogCase{pages: z.pages, perPage: z.perPage, procs: procs, conc: conc}
	}
	slow := func(c backlogCase) backlogCase { c.full = true; return c }
	deferBy := func(c backlogCase, d time.Duration) backlogCase { c.deferDelay = d; return c }
	cases := []backlogCase{
		// One process with 8 runners; then 8 processes of one runner,
		// where jobs of one page can land in different processes.
		at(outage, 1, 8),
		at(outage, 8, 1),
		// Control: the same 2,000 jobs, no two for one page, so no
		// deferrals: what the per-job overhead alone costs.
		at(flat, 8, 1),
		at(big, 1, 8),

		slow(at(outage, 2, 4)),
		slow(at(big, 2, 4)),
		slow(at(big, 8, 1)),
		// Sensitivity to worker.defer_delay.
		slow(deferBy(at(outage, 8, 1), 100*time.Millisecond)),
		slow(deferBy(at(outage, 8, 1), 5*time.Second)),
		slow(deferBy(at(big, 8, 1), 100*time.Millisecond)),
	}
	// The floor: the same 2,000 mails from 8 senders straight to the SMTP
	// server, no queue, no worker. On a small machine the client, the
	// server and their goroutines already cost more than nothing, so read
	// x_ideal of the cases below against this one.
	b.Run("floor/jobs=2000/senders=8", func(b *testing.B) {
		var makespan time.Duration
		var inFlight float64
		for i := 0; i < b.N; i++ {
			m, f := runSMTPFloor(b, 2000, 8)
			makespan += m
			inFlight += f
		}
		ideal := backlogCase{pages: 2000, perPage: 1, procs: 8, conc: 1}.ideal()
		b.ReportMetric(makespan.Seconds()/float64(b.N), "makespan_s")
		b.ReportMetric(makespan.Seconds()/float64(b.N)/ideal.Seconds(), "x_ideal")
		b.ReportMetric(inFlight/float64(b.N), "avg_sends_in_flight")
	})
	for _, c := range cases {
		b.Run(c.name(), func(b *testing.B) {
			if c.full && !full {
				b.Skip("set PAGEWATCH_BENCH_FULL=1 to run this case")
			}
			var sum backlogResult
			for i := 0; i < b.N; i++ {
				r := runBacklog(b, c)
				sum.add(r)
			}
			n := float64(b.N)
			b.ReportMetric(sum.makespan.Seconds()/n, "makespan_s")
			b.ReportMetric(sum.makespan.Seconds()/n/c.ideal().Seconds(), "x_ideal")
			b.ReportMetric(sum.deferrals/n/float64(c.jobs()), "deferrals/job")
			b.ReportMetric(sum.emails/n, "emails")
			b.ReportMetric(sum.maxPerPage/n, "max_page_sends")
			b.ReportMetric(sum.inFlight/n, "avg_sends_in_flight")
			b.ReportMetric(sum.maxInFlight/n, "max_sends_in_flight")
			b.ReportMetric(sum.p50.Seconds()/n, "p50_mail_s")
			b.ReportMetric(sum.p90.Seconds()/n, "p90_mail_s")
		})
	}
}

type backlogResult struct {
	makespan, p50, p90                time.Duration
	deferrals, emails                 float64
	maxPerPage, inFlight, maxInFlight float64
}

func (r *backlogResult) add(o backlogResult) {
	r.makespan += o.makespan
	r.p50 += o.p50
	r.p90 += o.p90
	r.deferrals += o.deferrals
	r.emails += o.emails
	r.maxPerPage += o.maxPerPage
	r.inFlight += o.inFlight
	r.maxInFlight += o.maxInFlight
}

func runBacklog(b *testing.B, c backlogCase) backlogResult {
	b.StopTimer()
	logger := slog.New(slog.NewTextHandler(b.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	pub, ns := testenv.NATS(b, logger)
	sm := smtptest.Start(b, smtptest.WithDelay(benchSendDelay))
	ctx := context.Background()

	// The backlog: page 1's jobs, then page 2's, and so on, each a
	// distinct crossing published as the sweeper does.
	stream, err := pub.JobsStream(ctx)
	if err != nil {
		b.Fatal(err)
	}
	jobs := make([]crossing.Crossing, 0, c.jobs())
	pageOf := map[string]string{} // Message-ID → page key
	keyOf := map[string]string{}  // Message-ID → crossing key
	crossedAt := time.Now().UTC()
	for p := 0; p < c.pages; p++ {
		site, path := "example.com", fmt.Sprintf("/page/%d", p)
		page := bus.Key(site, path)
		for e := 0; e < c.perPage; e++ {
			x := crossing.Crossing{Key: fmt.Sprintf("outage.%s.%d", page, e), Rule: "outage", Site: site, Path: path,
				Window: "1h", Threshold: 1000, Count: 1001, CrossedAt: crossedAt, Recipients: []string{"ops@example.com"}}
			jobs = append(jobs, x)
			id := "<" + crossing.MessageID(x.Key) + ">"
			pageOf[id], keyOf[id] = page, x.Key
		}
	}
	for _, x := range jobs {
		body, err := x.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		m := nats.NewMsg(pub.JobsSubject(bus.Key(x.Site, x.Path)))
		m.Data = body
		m.Header.Set(jetstream.MsgIDHeader, x.Key)
		if _, err := pub.JS.PublishMsgAsync(m); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-pub.JS.PublishAsyncComplete():
	case <-time.After(time.Minute):
		b.Fatal("publishing the backlog took over a minute")
	}
	if info, err := stream.Info(ctx); err != nil || info.State.Msgs != uint64(c.jobs()) {
		b.Fatalf("jobs stream holds %v messages (err %v), want %d", info.State.Msgs, err, c.jobs())
	}

	// The workers, each a process of its own: NATS connection, mailer,
	// metrics registry.
	hist := newMemHistory()
	type proc struct {
		w   *notify.Worker
		reg *prometheus.Registry
	}
	procs := make([]proc, c.procs)
	mc := mail.DefaultConfig()
	mc.Transport = "smtp"
	mc.SMTP.Host, mc.SMTP.Port, mc.SMTP.TLS = sm.Host, sm.Port, "none"
	for i := range procs {
		p := &procs[i]
		// The worker opens one mailer, so one SMTP connection, per runner.
		mailer := func() (notify.Mailer, error) { return mail.New(mc, logger) }
		cfg := notify.DefaultConfig()      // the shipped lease, defer delay and ack wait
		cfg.RateLimit = ratelimit.Config{} // the scenario measures locking, not the limits
		cfg.Name = fmt.Sprintf("bench-w%d", i)
		cfg.Concurrency = c.conc
		if c.deferDelay != 0 {
			cfg.DeferDelay = c.deferDelay
		}
		p.reg = prometheus.NewRegistry()
		p.w, err = notify.New(cfg, notify.Deps{Bus: testenv.NATSClient(b, ns.URL, logger), Mailers: mailer, History: hist, Logger: logger, Registry: p.reg})
		if err != nil {
			b.Fatal(err)
		}
	}

	b.StartTimer()
	start := time.Now()
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() { _ = p.w.Run(runCtx) })
	}
	ideal := c.ideal()
	deadline := time.Now().Add(30*time.Second + 20*ideal)
	for hist.count(crossing.Sent) < c.jobs() {
		if time.Now().After(deadline) {
			stop()
			wg.Wait()
			b.Fatalf("after %s: %d of %d jobs sent, %d mails received, outcomes %v",
				time.Since(start), hist.count(crossing.Sent), c.jobs(), len(sm.Messages()), hist.snapshot())
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.StopTimer()
	// Would another mail or another outcome still arrive?
	time.Sleep(300 * time.Millisecond)
	stop()
	wg.Wait()

	// Exactly once: every crossing mailed once, nothing else mailed.
	msgs := sm.Messages()
	if len(msgs) != c.jobs() {
		b.Errorf("%d mails for %d crossings", len(msgs), c.jobs())
	}
	mailed := map[string]int{}
	type interval struct {
		from, to time.Time
		page     string
	}
	sends := make([]interval, 0, len(msgs))
	for _, m := range msgs {
		id := messageID(m.Data)
		key, ok := keyOf[id]
		if !ok {
			b.Errorf("mail with unknown Message-ID %q", id)
			continue
		}
		mailed[key]++
		sends = append(sends, interval{m.Began, m.Accepted, pageOf[id]})
	}
	for _, x := range jobs {
		if n := mailed[x.Key]; n != 1 {
			b.Errorf("crossing %s mailed %d times", x.Key, n)
		}
	}
	for _, o := range []crossing.Outcome{crossing.Duplicate, crossing.Failed, "invalid"} {
		if n := hist.count(o); n != 0 {
			b.Errorf("%d jobs ended %s", n, o)
		}
	}
	if n := hist.count(crossing.Sent); n != c.jobs() {
		b.Errorf("%d jobs recorded sent, want %d", n, c.jobs())
	}
	if info, err := stream.Info(ctx); err != nil || info.State.Msgs != 0 {
		b.Errorf("jobs stream still holds %v messages (err %v)", info.State.Msgs, err)
	}

	// Deferrals, from the workers' own metrics, checked against the history.
	deferred := 0.0
	for _, p := range procs {
		deferred += counterValue(b, p.reg, "pagewatch_worker_jobs_total", "outcome", string(crossing.Deferred))
	}
	if int(deferred) != hist.count(crossing.Deferred) {
		b.Errorf("metrics say %v deferrals, history %d", deferred, hist.count(crossing.Deferred))
	}

	// Overlaps as the SMTP server saw them: per page (the lease must keep
	// it at 1) and overall (how many of the slots were sending).
	var last time.Time
	var busy time.Duration
	accepted := make([]time.Duration, 0, len(sends))
	byPage := map[string][]interval{}
	for _, s := range sends {
		last = maxTime(last, s.to)
		busy += s.to.Sub(s.from)
		accepted = append(accepted, s.to.Sub(start))
		byPage[s.page] = append(byPage[s.page], s)
	}
	maxOverlap := func(iv []interval) int {
		type edge struct {
			at time.Time
			d  int
		}
		edges := make([]edge, 0, 2*len(iv))
		for _, s := range iv {
			edges = append(edges, edge{s.from, +1}, edge{s.to, -1})
		}
		// Ends before starts at the same instant: touching is not overlapping.
		sort.Slice(edges, func(i, j int) bool {
			if !edges[i].at.Equal(edges[j].at) {
				return edges[i].at.Before(edges[j].at)
			}
			return edges[i].d < edges[j].d
		})
		n, m := 0, 0
		for _, e := range edges {
			n += e.d
			m = max(m, n)
		}
		return m
	}
	maxPerPage := 0
	for _, iv := range byPage {
		maxPerPage = max(maxPerPage, maxOverlap(iv))
	}
	if maxPerPage != 1 {
		b.Errorf("the SMTP server saw %d sends for one page at once, want 1", maxPerPage)
	}
	slices.Sort(accepted)
	makespan := last.Sub(start)
	r := backlogResult{
		makespan:    makespan,
		deferrals:   deferred,
		emails:      float64(len(msgs)),
		maxPerPage:  float64(maxPerPage),
		inFlight:    busy.Seconds() / makespan.Seconds(),
		maxInFlight: float64(maxOverlap(sends)),
	}
	if len(accepted) > 0 {
		r.p50, r.p90 = accepted[len(accepted)/2], accepted[len(accepted)*9/10]
	}
	// How often single jobs were deferred, and how busy the slots were
	// over time.
	var hops [4]int
	for _, x := range jobs {
		hops[min(hist.perKey[x.Key][crossing.Deferred], 3)]++
	}
	step := max(500*time.Millisecond, (makespan / 40).Round(500*time.Millisecond))
	timeline := make([]time.Duration, int(makespan/step)+1)
	for _, s := range sends {
		for t := s.from; t.Before(s.to); {
			i := int(t.Sub(start) / step)
			next := minTime(s.to, start.Add(time.Duration(i+1)*step))
			if i >= 0 && i < len(timeline) {
				timeline[i] += next.Sub(t)
			}
			t = next
		}
	}
	var tl strings.Builder
	for _, d := range timeline {
		fmt.Fprintf(&tl, " %.1f", d.Seconds()/step.Seconds())
	}
	b.Logf("%s: jobs deferred 0/1/2/3+ times: %v; sends in flight per %s:%s", c.name(), hops, step, tl.String())
	if g := hist.gaps; len(g) > 0 {
		slices.Sort(g)
		var sum time.Duration
		for _, d := range g {
			sum += d
		}
		b.Logf("%s: a deferral kept its job away for %s on average, p50 %s, p99 %s, max %s",
			c.name(), (sum / time.Duration(len(g))).Round(time.Millisecond), g[len(g)/2].Round(time.Millisecond),
			g[len(g)*99/100].Round(time.Millisecond), g[len(g)-1].Round(time.Millisecond))
	}
	b.Logf("%s: makespan %s (ideal %s, ×%.2f), %.2f deferrals/job, %d mails, sends in flight avg %.2f max %.0f, half the mail by %s, 90%% by %s",
		c.name(), makespan.Round(time.Millisecond), ideal, makespan.Seconds()/ideal.Seconds(), deferred/float64(c.jobs()),
		len(msgs), r.inFlight, r.maxInFlight, r.p50.Round(time.Millisecond), r.p90.Round(time.Millisecond))
	return r
}
