package sweep

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// addLaunch loads a new page's views from at: a first hour of first
// views, halving every hour after, spread every 10 minutes, for 6 hours.
func (b *bundle) addLaunch(t *testing.T, path string, first int, at time.Time) {
	t.Helper()
	b.seq++
	batch := hit.Batch{Seq: b.seq}
	for m := 0; m < 6*60; m += 10 {
		n := int(math.Round(float64(first) / 6 * math.Exp2(-float64(m/60))))
		for range n {
			batch.Hits = append(batch.Hits, hit.Hit{Time: at.Add(time.Duration(m) * time.Minute), Site: "example.com", Path: path, Offset: uint64(len(batch.Hits))})
		}
	}
	if err := b.ch.Hits().InsertHits(context.Background(), []hit.Batch{batch}); err != nil {
		t.Fatal(err)
	}
}

// A site's new pages are judged, in their launch, against its launches:
// after four posts of about 150 views in their first hour, a fifth like
// them is not news, and a sixth of ten times that is told once, with
// sweepers racing. The launches are read from the pages' states, which
// say their site. A rule looking only up, the same.
func TestSweepJudgesANewPageAgainstItsSitesLaunches(t *testing.T) {
	unusualEachWay(t, sweepNewPageAgainstLaunches)
}

func sweepNewPageAgainstLaunches(t *testing.T, r rules.Rule) {
	b := setup(t)
	b.cfg.Rules = []rules.Rule{r}
	now := time.Now().UTC().Truncate(time.Hour).Add(-10 * time.Hour)
	b.addSteady(t, "/", 60, now.Add(-10*24*time.Hour), now.Add(10*time.Hour))
	c := &clock{t: now}
	s := b.sweeper(t, c)
	sweepOver := func(from time.Time) {
		for at := from.Add(10 * time.Minute); !at.After(from.Add(9 * time.Hour)); at = at.Add(10 * time.Minute) {
			if at.Sub(from) > 3*time.Hour && at.Minute() != 0 {
				continue // hourly once the launch has peaked
			}
			c.set(at)
			b.sweep(t, s)
		}
	}
	for i, first := range []int{150, 180, 170, 140} {
		at := now.Add(-time.Duration(4-i) * 24 * time.Hour)
		b.addLaunch(t, fmt.Sprintf("/posts/%d", i+1), first, at)
		sweepOver(at)
	}
	early := b.jobs(t)
	launched := 0
	s.state.eachLaunched(func(key string, st pageState) bool {
		if _, ok := rules.LaunchOf(st.State); ok && st.Site == "example.com" {
			launched++
		}
		return true
	})
	if launched != 4 {
		t.Fatalf("%d states remember a launch on example.com, want the 4 posts'", launched)
	}

	b.addLaunch(t, "/posts/5", 162, now)
	sweepOver(now)
	if n := len(early); n != 6 {
		t.Errorf("the first four posts: %s; want the first two and the third (then the second largest) told and resolved", describe(early))
	}
	if got := b.jobs(t)[len(early):]; len(got) != 0 {
		t.Fatalf("a launch like the site's others: %s, want nothing", describe(got))
	}

	var peaks []uint64
	s.state.eachLaunched(func(_ string, st pageState) bool {
		if l, ok := rules.LaunchOf(st.State); ok {
			peaks = append(peaks, l.Count)
		}
		return true
	})
	slices.Sort(peaks)
	at := now.Add(9*time.Hour + 30*time.Minute)
	b.addLaunch(t, "/posts/6", 1620, at.Add(-20*time.Minute))
	c.set(at)
	b.raceSweeps(t, c, 4)
	var fires []crossing.Crossing
	for _, x := range b.jobs(t)[len(early):] {
		if x.Event == "fire" {
			fires = append(fires, x)
		}
	}
	if len(fires) != 1 || fires[0].Path != "/posts/6" {
		t.Fatalf("a launch ten times the site's: %s, want one fire of /posts/6", describe(fires))
	}
	if w := fires[0].Why; !w.Launch || w.LaunchPassed != peaks[len(peaks)-2] {
		t.Errorf("its why: launch %v, passed %d; want a launch past the second largest of the others' peaks %v", w.Launch, w.LaunchPassed, peaks)
	}

	// Sweepers started since read the launches from the states they
	// load: a launch like the others, judged by four racing, is nothing.
	at7 := at.Add(2 * time.Hour)
	b.addLaunch(t, "/posts/7", 160, at7.Add(-30*time.Minute))
	c.set(at7)
	b.raceSweeps(t, c, 4)
	for _, x := range b.jobs(t) {
		if x.Path == "/posts/7" {
			t.Fatalf("a launch like the others, judged by sweepers started since: %s, want nothing", describe([]crossing.Crossing{x}))
		}
	}

	// A backtest over the same hours, which steps a site's pages
	// together as a sweep every minute would, tells the same launches.
	xs, err := b.sweeper(t, &clock{t: at7}).Backtest(context.Background(), now.Add(-4*24*time.Hour-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var told []string
	for _, x := range xs {
		if x.Event == "fire" {
			told = append(told, x.Path)
		}
	}
	if got := fmt.Sprint(told); got != "[/posts/1 /posts/2 /posts/3 /posts/6]" {
		t.Errorf("the backtest told %s, want the launches the sweeps told", got)
	}
}

// BenchmarkSiteLaunches is what a sweep spends reading its sites'
// launches from the mirror: a million states, one in a hundred a
// launch, on 100 sites, under the shipped rule.
func BenchmarkSiteLaunches(b *testing.B) {
	rs := []rules.Rule{unusualBoth()}
	rs[0].Site = ""
	if err := rules.ValidateAll("rules", rs); err != nil {
		b.Fatal(err)
	}
	set := newRuleSet(rs)
	now := time.Date(2026, 3, 30, 12, 0, 0, 0, time.UTC)
	st := newStateStore(nil, nil)
	for i := range 1_000_000 {
		var s rules.State
		s.Bursts = []rules.Burst{{At: now.Add(-time.Duration(i%600) * time.Hour), Count: uint64(50 + i%300)}}
		if i%100 == 0 {
			s.Bursts[0].Launch, s.Site = true, fmt.Sprintf("site%d.example", i%10_000/100)
		}
		st.store(stateKey(&rs[0], "x", fmt.Sprint(i)), pageState{State: s}, uint64(i+1))
	}
	sw := &Sweeper{state: st}
	runtime.GC() // the mirror's million states, not the sweep's garbage
	b.ResetTimer()
	for range b.N {
		if got := sw.siteLaunches(set, now); len(got) != 100 {
			b.Fatalf("%d sites' launches, want 100", len(got))
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/sweep")
}

// A launch older than 4 weeks leaves the index a sweep reads (states are
// kept for good), and comes back when its page launches again.
func TestSiteLaunchesForgetOldOnes(t *testing.T) {
	rs := []rules.Rule{unusualBoth()}
	if err := rules.ValidateAll("rules", rs); err != nil {
		t.Fatal(err)
	}
	set := newRuleSet(rs)
	now := time.Date(2026, 3, 30, 12, 0, 0, 0, time.UTC)
	st := newStateStore(nil, nil)
	launch := func(key string, at time.Time) {
		st.store(key, pageState{State: rules.State{Site: "example.com",
			Bursts: []rules.Burst{{At: at, Count: 100, Launch: true}}}}, uint64(at.Unix()))
	}
	old, fresh := stateKey(&rs[0], "example.com", "/old"), stateKey(&rs[0], "example.com", "/fresh")
	launch(old, now.Add(-29*24*time.Hour))
	launch(fresh, now.Add(-time.Hour))
	sw := &Sweeper{state: st}
	if got := sw.siteLaunches(set, now)[launchGroup{0, "example.com"}]; got.Len() != 1 {
		t.Fatalf("%d launches read, want the fresh one", got.Len())
	}
	if _, ok := st.launched[old]; ok {
		t.Errorf("a launch 29 days old is still indexed")
	}
	launch(old, now)
	if got := sw.siteLaunches(set, now)[launchGroup{0, "example.com"}]; got.Len() != 2 {
		t.Errorf("%d launches read after /old launched again, want 2", got.Len())
	}
}
