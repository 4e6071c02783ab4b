package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/pipeline/tail/tailstatus"
)

// addSteady loads perHour views of path, spread every 10 minutes, over
// [from, to), as one batch.
func (b *bundle) addSteady(t *testing.T, path string, perHour int, from, to time.Time) {
	t.Helper()
	b.seq++
	batch := hit.Batch{Seq: b.seq}
	for at := from; at.Before(to); at = at.Add(10 * time.Minute) {
		for i := 0; i < perHour/6; i++ {
			batch.Hits = append(batch.Hits, hit.Hit{Time: at, Site: "example.com", Path: path, Offset: uint64(len(batch.Hits))})
		}
	}
	if err := b.ch.Hits().InsertHits(context.Background(), []hit.Batch{batch}); err != nil {
		t.Fatal(err)
	}
}

func unusualBoth() rules.Rule {
	return rules.Rule{Name: "unusual", Site: "example.com", Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"),
		Unusual: &rules.Unusual{Direction: rules.Both}, NotifyOn: []rules.Event{rules.EventFire, rules.EventEscalate, rules.EventResolve},
		Notify: rules.Notify{Recipients: []string{"ops@example.com"}}}
}

// unusualEachWay runs f as subtests with unusualBoth() looking both ways
// and looking only up: a rule looking up judges a page's surges as one
// looking both ways does.
func unusualEachWay(t *testing.T, f func(t *testing.T, r rules.Rule)) {
	for _, dir := range []rules.Direction{rules.Both, rules.Up} {
		t.Run(string(dir), func(t *testing.T) {
			r := unusualBoth()
			u := *r.Unusual
			u.Direction = dir
			r.Unusual = &u
			f(t, r)
		})
	}
}

// The tailer stopped for 3 hours: the site's pages fall to nothing, but
// the data is late, not the pages quiet. Two sweepers racing send one
// "no data" message and no drop; once the data is loaded again, one
// resolve, and still no drop.
func TestTailerStoppedSendsNoDataNotDrops(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = []rules.Rule{unusualBoth()}
	now := time.Now().UTC().Truncate(time.Minute)
	stop := now.Add(-3 * time.Hour)
	b.addSteady(t, "/checkout", 120, now.Add(-8*24*time.Hour), stop)
	b.addSteady(t, "/home", 60, now.Add(-8*24*time.Hour), stop)

	// The tailer of the site's log is stopped: its last record says so
	// (until its TTL), and the message says it.
	kv, err := b.bus.KV(context.Background(), tailstatus.Bucket, tailstatus.TTL)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(tailstatus.Tailer{Instance: "web-1", Host: "h1", At: now.Add(-time.Minute), Interval: tailstatus.Interval, Stopped: true,
		Inputs: []tailstatus.Input{{Kind: tailstatus.KindFile, Name: "/var/log/nginx/example.log", Site: "example.com"}}})
	if _, err := kv.Put(context.Background(), tailstatus.Key("web-1", "h1"), rec); err != nil {
		t.Fatal(err)
	}

	c := &clock{t: now}
	a, z := b.sweeper(t, c), b.sweeper(t, c)
	var wg sync.WaitGroup
	for _, s := range []*Sweeper{a, z, a, z} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = s.sweep(context.Background(), c.now()) }()
	}
	wg.Wait()
	if got := describe(b.jobs(t)); fmt.Sprint(got) != "[fire no_data example.com]" {
		t.Fatalf("while the tailer is stopped: %v, want one no-data message", got)
	}
	x := b.jobs(t)[0]
	if !x.Why.Since.Equal(stop.Add(-10*time.Minute)) || x.Path != "" {
		t.Errorf("no-data message %+v, why %+v: want it of the site, since its newest hit %s", x, x.Why, stop.Add(-10*time.Minute))
	}
	if want := "not heard from: web-1 on h1, stopped at " + now.Add(-time.Minute).Format("15:04 UTC"); x.Why.Feeds.Text() != want {
		t.Errorf("no-data message's logs: %q, want %q", x.Why.Feeds.Text(), want)
	}
	if got := testMetric(t, a.metrics.sitesLate); got != 1 {
		t.Errorf("pagewatch_sweeper_sites_late = %v while the tailer is stopped, want 1", got)
	}

	// The tailer is back and catches up on the 3 hours.
	b.addSteady(t, "/checkout", 120, stop, now.Add(5*time.Minute))
	b.addSteady(t, "/home", 60, stop, now.Add(5*time.Minute))
	for i := 1; i <= 3; i++ {
		c.set(now.Add(time.Duration(i) * 2 * time.Minute))
		b.sweep(t, a)
	}
	if got := describe(b.jobs(t)); fmt.Sprint(got) != "[fire no_data example.com resolve no_data example.com]" {
		t.Errorf("after the data came back: %v, want the no-data message and its resolve, and no drop", got)
	}
	if got := testMetric(t, a.metrics.sitesLate); got != 0 {
		t.Errorf("pagewatch_sweeper_sites_late = %v after the data came back, want 0", got)
	}
}

// The tailer stopped for 3 hours and came back without them (its logs
// rotated away meanwhile): a spike rule looking down, which fires at its
// first look, tells "no data" and its resolve, and no drop in the hour
// after, whose window still holds the hole. Before, it said "went quiet"
// at the first sweep the data flowed again.
func TestSpikeDownIsNoDropAfterAHoleLive(t *testing.T) {
	b := setup(t)
	r := spikeRuleOf("quiet", rules.Spike{Factor: 4, MinCount: 20, Direction: rules.Down,
		Baseline: rules.Baseline{SameTime: &rules.SameTime{Days: 7}}})
	r.Site, r.NotifyOn = "example.com", []rules.Event{rules.EventFire, rules.EventResolve}
	b.cfg.Rules = []rules.Rule{r}
	now := time.Now().UTC().Truncate(time.Minute)
	stop := now.Add(-3 * time.Hour)
	b.addSteady(t, "/checkout", 120, now.Add(-8*24*time.Hour), stop)

	c := &clock{t: now}
	s := b.sweeper(t, c)
	b.sweep(t, s)
	b.addSteady(t, "/checkout", 120, now, now.Add(80*time.Minute))
	for at := now.Add(2 * time.Minute); at.Before(now.Add(80 * time.Minute)); at = at.Add(10 * time.Minute) {
		c.set(at)
		b.sweep(t, s)
	}
	if got := describe(b.jobs(t)); fmt.Sprint(got) != "[fire no_data example.com resolve no_data example.com]" {
		t.Errorf("the hour after a hole: %v, want the no-data message and its resolve, and no drop", got)
	}
}

// A line dated hours ahead (a clock that jumped, a forged syslog line)
// is no fresh data: the tailer stopped 3 hours ago is still late, with
// one "no data" message and no drop, though the site has a minute with
// hits 6 hours from now.
func TestHitDatedAheadDoesNotHideLateData(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = []rules.Rule{unusualBoth()}
	now := time.Now().UTC().Truncate(time.Minute)
	stop := now.Add(-3 * time.Hour)
	b.addSteady(t, "/checkout", 120, now.Add(-8*24*time.Hour), stop)
	b.addSteady(t, "/home", 60, now.Add(-8*24*time.Hour), stop)
	b.addSteady(t, "/junk", 6, now.Add(6*time.Hour), now.Add(6*time.Hour+time.Minute))

	c := &clock{t: now}
	b.sweep(t, b.sweeper(t, c))
	if got := describe(b.jobs(t)); fmt.Sprint(got) != "[fire no_data example.com]" {
		t.Fatalf("with a hit dated 6 hours ahead: %v, want one no-data message", got)
	}
}

func describe(xs []crossing.Crossing) []string {
	var out []string
	for _, x := range xs {
		name := x.Path
		if x.Why.SiteWide() {
			name = x.Site
		}
		out = append(out, fmt.Sprintf("%s %s %s", x.Event, x.Why.Kind, name))
	}
	return out
}

// The same page stopping while its site's data flows is a page gone
// quiet: one drop, after down_for, and no "no data" message.
func TestPageStoppingWhileItsSiteFlowsIsADrop(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = []rules.Rule{unusualBoth()}
	now := time.Now().UTC().Truncate(time.Minute)
	stop := now.Add(-3 * time.Hour)
	b.addSteady(t, "/checkout", 120, now.Add(-8*24*time.Hour), stop)
	b.addSteady(t, "/home", 60, now.Add(-8*24*time.Hour), now.Add(time.Minute))

	c := &clock{t: stop}
	s := b.sweeper(t, c)
	for at := stop; !at.After(now); at = at.Add(10 * time.Minute) {
		c.set(at)
		b.sweep(t, s)
	}
	jobs := b.jobs(t)
	if got := describe(jobs); fmt.Sprint(got) != "[fire unusual /checkout]" {
		t.Fatalf("got %v, want one drop of /checkout", got)
	}
	if x := jobs[0]; x.Why.Direction != "down" || x.Count != 0 || x.Why.Low <= 0 {
		t.Errorf("drop %+v, why %+v", x, x.Why)
	}
}

// A rule looking down over every page reads the normals of all of them:
// their paths no longer fit in one query's text (ClickHouse's
// max_query_size is 256 KiB), so they are read in runs, or, from
// allPathsFrom pages, by one query over every page of the site.
func TestNormalsOfManyLongPathsAreRead(t *testing.T) {
	for _, pages := range []int{3000, allPathsFrom + 1000} {
		t.Run(fmt.Sprint(pages), func(t *testing.T) {
			b := setup(t)
			b.cfg.Rules = []rules.Rule{unusualBoth()}
			now := time.Now().UTC().Truncate(time.Minute)
			b.seq++
			batch := hit.Batch{Seq: b.seq}
			for p := 0; p < pages; p++ {
				path := fmt.Sprintf("/%s/%05d", strings.Repeat("long-segment-", 9), p) // 125 bytes: 375 KB of paths and more
				for d := 1; d <= 3; d++ {
					for i := 0; i <= p%3; i++ { // 1 to 3 views each day
						batch.Hits = append(batch.Hits, hit.Hit{Time: now.Add(-time.Duration(d)*24*time.Hour - 30*time.Minute), Site: "example.com", Path: path, Offset: uint64(len(batch.Hits))})
					}
				}
			}
			if err := b.ch.Hits().InsertHits(context.Background(), []hit.Batch{batch}); err != nil {
				t.Fatal(err)
			}
			s := b.sweeper(t, &clock{t: now})
			b.sweep(t, s)
			if n := len(s.baselines.cache); n != pages {
				t.Fatalf("normals of %d pages read, want %d", n, pages)
			}
			for k, c := range s.baselines.cache {
				// Views at this hour of the past days: the page's own hours were read.
				if !c.exp.OK || c.exp.Top < 1 || c.exp.Days != 2 {
					t.Fatalf("%s: normal %+v", k.path, c.exp)
				}
			}
		})
	}
}

func TestByPathBytes(t *testing.T) {
	pages := map[normalKey][]ref{}
	for _, p := range []string{"/c", "/a", "/" + strings.Repeat("x", 30), "/b"} {
		pages[normalKey{path: p}] = []ref{{key: p}}
	}
	var got []string
	for _, run := range byPathBytes(pages, 12) {
		var ps []string
		for _, k := range run {
			ps = append(ps, k.path[:min(len(k.path), 3)])
		}
		got = append(got, strings.Join(ps, ","))
	}
	if fmt.Sprint(got) != "[/a,/b /c /xx]" {
		t.Errorf("runs %v", got)
	}
}

// A sweeper down for three hours while a page surged catches up when it
// returns, with two sweepers racing, for the shipped kind of rule too:
// the fire and the escalate go out once each, stamped when they happened
// and judged against that hour's normal; the resolve once. The site's
// other page keeps its data on time, so nothing is held as late.
func TestUnusualCatchUpAfterDowntimeOnceEach(t *testing.T) {
	b := setup(t)
	r := unusualBoth()
	r.Escalate, r.Rearm.Settle = []float64{3}, 30*time.Minute
	b.cfg.Rules = []rules.Rule{r}
	h := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	b.spikeHistory(t, h)
	b.addSteady(t, "/home", 60, h.Add(-5*24*time.Hour), h.Add(3*time.Hour+5*time.Minute))
	c := &clock{t: h.Add(5 * time.Minute)}
	b.sweep(t, b.sweeper(t, c))
	b.addHits(t, "/post", 100, h.Add(10*time.Minute))
	b.addHits(t, "/post", 200, h.Add(12*time.Minute))
	c.set(h.Add(3 * time.Hour))
	b.raceSweeps(t, c, 2)
	c.set(h.Add(3*time.Hour + time.Minute))
	b.raceSweeps(t, c, 2)

	var got []string
	for _, x := range b.jobs(t) {
		got = append(got, fmt.Sprintf("%s %s %s count %d expected %.0f-%.0f", x.Path, x.Event, x.CrossedAt.Sub(h), x.Count, x.Why.Low, x.Why.High))
	}
	slices.Sort(got)
	want := []string{
		"/post escalate 12m59s count 300 expected 0-34",
		"/post fire 10m59s count 100 expected 0-34",
		"/post resolve 3h0m0s count 0 expected 0-642", // the hour it resolves in: 500 a day at h+2h30
	}
	if !slices.Equal(got, want) {
		t.Errorf("jobs after the catch-up:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A burst of minutes while no sweeper ran is heard at the catch-up, as
// the sweeps it missed would have heard it: 60 views in a minute on a
// page of 60 an hour puts its hour at 2 x (inside what the hour needs,
// 5 noise units) but its 10 minutes at 7 x. Before the catch-up read a
// burst's minutes, it sent nothing.
func TestCatchUpHearsABurstOfMinutes(t *testing.T) {
	b := setup(t)
	r := unusualBoth()
	b.cfg.Rules = []rules.Rule{r}
	h := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	b.addSteady(t, "/home", 60, h.Add(-9*24*time.Hour), h.Add(3*time.Hour+5*time.Minute))
	c := &clock{t: h.Add(5 * time.Minute)}
	s := b.sweeper(t, c)
	b.sweep(t, s)
	b.addHits(t, "/home", 60, h.Add(time.Hour+3*time.Minute))
	c.set(h.Add(3 * time.Hour)) // no sweep for 3 hours
	b.sweep(t, s)

	var got []string
	for _, x := range b.jobs(t) {
		got = append(got, fmt.Sprintf("%s %s %s count %d burst %d in %s", x.Path, x.Event, x.CrossedAt.Sub(h), x.Count, x.Why.BurstCount, x.Why.Burst))
	}
	// Back at 2:03, when the burst's minute leaves the hour: its resolve,
	// an hour later, is the next sweep's.
	want := []string{"/home fire 1h3m59s count 120 burst 70 in 10m0s"}
	if !slices.Equal(got, want) {
		t.Errorf("jobs after the catch-up:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The backtest of the shipped kind of rule reads the same from ClickHouse
// and from a counts file: a week of a page's rhythm, then a surge and a
// drop, each with its usual range.
func TestUnusualBacktestFromFileEqualsFromClickHouse(t *testing.T) {
	b := setup(t)
	r := unusualBoth()
	r.Escalate = []float64{2}
	b.cfg.Rules = []rules.Rule{r}
	end := time.Now().UTC().Truncate(time.Minute)
	start := end.Add(-9 * 24 * time.Hour)
	var csv strings.Builder
	for i := 0; i < 9*24; i++ {
		at := start.Add(time.Duration(i)*time.Hour + 17*time.Minute)
		n := 60 + (i%24)*5
		switch {
		case i == 9*24-30:
			n = 900 // a surge
		case i >= 9*24-12 && i < 9*24-6:
			n = 2 // a drop of six hours
		}
		b.addHits(t, "/post", n, at)
		fmt.Fprintf(&csv, "%s,example.com,/post,%d\n", at.Format(time.RFC3339), n)
	}
	since := start.Add(7 * 24 * time.Hour)
	fromCH, err := b.sweeper(t, &clock{t: end}).Backtest(context.Background(), since)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := LoadRules(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := ReadCounts(strings.NewReader(csv.String()), "counts.csv")
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := Backtest(context.Background(), cf, rs, since, end, b.logger)
	if err != nil {
		t.Fatal(err)
	}
	line := func(xs []crossing.Crossing) []string {
		var out []string
		for _, x := range xs {
			out = append(out, fmt.Sprintf("%s %s %s %d %s %.1f-%.1f", x.CrossedAt.Format(time.RFC3339), x.Event, x.Why.Direction, x.Count, x.Path, x.Why.Low, x.Why.High))
		}
		slices.Sort(out)
		return out
	}
	got, want := line(fromFile), line(fromCH)
	if !slices.Equal(got, want) {
		t.Errorf("from the file:\n%s\nfrom ClickHouse:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	events := strings.Join(got, "\n")
	for _, e := range []string{" fire up ", " resolve up ", " fire down ", " resolve down "} {
		if !strings.Contains(events, e) {
			t.Errorf("no%sin:\n%s", e, events)
		}
	}
}

// Thirty sites going late at once under one rule are thirty "no data"
// messages, not a storm guard's digest of pages.
func TestNoDataIsNeverFolded(t *testing.T) {
	r := unusualBoth()
	if err := r.Validate("rule"); err != nil {
		t.Fatal(err)
	}
	h := &handOn{}
	var vs []*verdict
	for i := 0; i < 30; i++ {
		site := fmt.Sprintf("site%d.example", i)
		vs = append(vs, &verdict{key: noDataPrefix + r.Name + "." + site, rule: &r,
			fired: []crossing.Crossing{{Key: site, Rule: r.Name, Site: site, Event: "fire", Why: &crossing.Why{Kind: crossing.KindNoData}}}})
	}
	jobs, all := h.guard(vs)
	if len(jobs) != 30 || len(all) != 30 {
		t.Fatalf("%d jobs for %d crossings, want 30 and 30", len(jobs), len(all))
	}
	for _, j := range jobs {
		if j.x.Digest != nil {
			t.Fatalf("a digest: %+v", j.x)
		}
	}
}

// A small site whose views come one every 20 minutes is not late between
// them: its gaps are its normal, and none of its pages is big enough to
// go quiet. Sweeps every 5 minutes through an evening send nothing, where
// a fixed data_late_after (10 minutes) told "no data" and "flows again"
// every 20 minutes. A big site stopping is still told once.
func TestSparseSiteIsNotLateBetweenItsViews(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = []rules.Rule{unusualBoth()}
	now := time.Now().UTC().Truncate(time.Hour)
	got := b.sweepWhileTheTailerKeepsUp(t, now.Add(-8*24*time.Hour), now, 3*time.Hour, func(at time.Time) int {
		if at.Minute()%20 == 0 {
			return 1
		}
		return 0
	})
	if len(got) != 0 {
		t.Errorf("a site of a view every 20 minutes: %v, want nothing", got)
	}
}

// A blog's visitors read a few pages each, within a minute or two: its
// views come in visits, 8 at a time, 30 or 70 minutes apart. Its normals
// expect a view every 6 minutes, after which a 70-minute silence would
// be a chance of one in a thousand silences (43 minutes), but visits that far apart
// are its rhythm: counted by the minutes with hits, as a sweep now does,
// it is not late between them. Before, by its views, it said "no data"
// and "data again" twice in these 6 hours.
func TestVisitsOfAFewViewsAreNotLateBetweenThem(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = []rules.Rule{unusualBoth()}
	now := time.Now().UTC().Truncate(time.Hour)
	t0 := now.Add(-8 * 24 * time.Hour)
	got := b.sweepWhileTheTailerKeepsUp(t, t0, now, 6*time.Hour, func(at time.Time) int {
		// a visit at minutes 0 and 30 of every 100: 4 views in each of
		// its 2 minutes
		if m := int(at.Sub(t0)/time.Minute) % 100; m == 0 || m == 1 || m == 30 || m == 31 {
			return 4
		}
		return 0
	})
	if len(got) != 0 {
		t.Errorf("a blog of visits 30 and 70 minutes apart: %v, want nothing", got)
	}
}

// sweepWhileTheTailerKeepsUp loads a site's views (viewsAt each minute,
// on two pages) from history to now, then sweeps every 5 minutes for
// span, loading each 5 minutes' views before it as a tailer that keeps
// up would, and describes the messages.
func (b *bundle) sweepWhileTheTailerKeepsUp(t *testing.T, history, now time.Time, span time.Duration, viewsAt func(time.Time) int) []string {
	t.Helper()
	load := func(from, to time.Time) {
		b.seq++
		batch := hit.Batch{Seq: b.seq}
		for at := from; at.Before(to); at = at.Add(time.Minute) {
			for i := range viewsAt(at) {
				batch.Hits = append(batch.Hits, hit.Hit{Time: at.Add(time.Duration(i) * time.Second), Site: "example.com",
					Path: "/blog/post-" + strconv.Itoa(i%2), Offset: uint64(len(batch.Hits))})
			}
		}
		if len(batch.Hits) == 0 {
			return
		}
		if err := b.ch.Hits().InsertHits(context.Background(), []hit.Batch{batch}); err != nil {
			t.Fatal(err)
		}
	}
	load(history, now.Add(time.Minute))
	c := &clock{t: now}
	s := b.sweeper(t, c)
	for at := now.Add(5 * time.Minute); at.Before(now.Add(span)); at = at.Add(5 * time.Minute) {
		load(at.Add(-4*time.Minute), at.Add(time.Minute))
		c.set(at)
		b.sweep(t, s)
	}
	return describe(b.jobs(t))
}
