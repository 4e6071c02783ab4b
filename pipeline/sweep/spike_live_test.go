package sweep

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// raceSweeps runs n sweepers' sweeps at once at the same time, past the
// lease: the claims alone must keep each message single.
func (b *bundle) raceSweeps(t *testing.T, c *clock, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		s := b.sweeper(t, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.sweep(context.Background(), c.now())
		}()
	}
	wg.Wait()
	b.sweep(t, b.sweeper(t, c)) // hands on whatever a loser left pending
}

// A spike rule over every site fires, escalates and resolves one episode
// once each, with four sweepers racing at every step, judging the page
// against the same hour of the past days read from ClickHouse.
func TestSpikeEpisodeOnceEachWithRacingSweepers(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = []rules.Rule{{Name: "spike", Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"),
		Spike:    &rules.Spike{Factor: 4, MinCount: 50, Baseline: rules.Baseline{SameTime: &rules.SameTime{Days: 3}}},
		Escalate: []float64{3}, NotifyOn: []rules.Event{rules.EventFire, rules.EventEscalate, rules.EventResolve},
		Rearm: rules.Rearm{Hysteresis: 0.5}, Notify: rules.Notify{Recipients: []string{"ops@example.com"}}}}
	now := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour + 10*time.Minute)
	b.addHits(t, "/post", 1, now.Add(-5*24*time.Hour)) // the data begins
	for k := 1; k <= 3; k++ {
		b.addHits(t, "/post", 20, now.Add(-time.Duration(k)*24*time.Hour-30*time.Minute))
	}
	c := &clock{t: now}
	b.addHits(t, "/post", 100, now.Add(-5*time.Minute)) // 100 >= 4 × 20 and >= 50
	b.raceSweeps(t, c, 4)
	b.addHits(t, "/post", 200, now.Add(-4*time.Minute)) // 300 >= 3 × 80
	c.set(now.Add(2 * time.Minute))
	b.raceSweeps(t, c, 4)
	c.set(now.Add(3 * time.Minute))
	b.raceSweeps(t, c, 2) // nothing new
	c.set(now.Add(2 * time.Hour))
	b.raceSweeps(t, c, 4) // the window is empty: back to normal

	jobs := b.jobs(t)
	byEvent := map[string][]crossing.Crossing{}
	for _, x := range jobs {
		byEvent[x.Event] = append(byEvent[x.Event], x)
	}
	if len(jobs) != 3 || len(byEvent["fire"]) != 1 || len(byEvent["escalate"]) != 1 || len(byEvent["resolve"]) != 1 {
		t.Fatalf("want one fire, one escalate, one resolve; got %d jobs: %+v", len(jobs), jobs)
	}
	fire, esc, res := byEvent["fire"][0], byEvent["escalate"][0], byEvent["resolve"][0]
	if fire.Why == nil || fire.Why.Baseline != 20 || fire.Why.Count != 100 || fire.Why.Factor != 4 || fire.Site != "example.com" || fire.Path != "/post" {
		t.Errorf("fire: %+v why %+v", fire, fire.Why)
	}
	if esc.Why == nil || esc.Why.Step != 3 || esc.Count != 300 {
		t.Errorf("escalate: %+v why %+v", esc, esc.Why)
	}
	if res.Why == nil || res.Why.Peak != 300 || res.Path != "/post" || res.Key != fire.Key+".resolved" {
		t.Errorf("resolve: %+v why %+v", res, res.Why)
	}
}

// A backtest reads the same counts the same way from ClickHouse and from
// a counts file.
func TestBacktestFromFileEqualsFromClickHouse(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = append(b.cfg.Rules, rules.Rule{Name: "spike", Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"),
		Spike:    &rules.Spike{Factor: 3, MinCount: 30, Baseline: rules.Baseline{SameTime: &rules.SameTime{Days: 2}}},
		NotifyOn: []rules.Event{rules.EventFire, rules.EventEscalate, rules.EventResolve}, Escalate: []float64{2},
		Notify: rules.Notify{Recipients: []string{"ops@example.com"}}})
	end := time.Now().UTC().Truncate(time.Minute)
	start := end.Add(-4 * 24 * time.Hour)
	var csv strings.Builder
	for i := 0; i < 4*24; i++ {
		at := start.Add(time.Duration(i)*time.Hour + 17*time.Minute)
		n := 10 + (i%24)*2
		switch i {
		case 80:
			n = 150 // a spike: fires under 2 × its level (3 × 26), escalates, resolves
		case 81:
			n = 700
		}
		for _, path := range []string{"/pricing", "/post"} {
			b.addHits(t, path, n, at)
			fmt.Fprintf(&csv, "%s,example.com,%s,%d\n", at.Format(time.RFC3339), path, n)
		}
	}
	c := &clock{t: end}
	since := start.Add(2 * 24 * time.Hour)
	fromCH, err := b.sweeper(t, c).Backtest(context.Background(), since)
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
			l := fmt.Sprintf("%s %s %s %d %s", x.CrossedAt.Format(time.RFC3339), x.Key, x.Event, x.Count, x.Path)
			if x.Why != nil {
				l += fmt.Sprintf(" base %.1f", x.Why.Baseline)
			}
			out = append(out, l)
		}
		slices.Sort(out)
		return out
	}
	got, want := line(fromFile), line(fromCH)
	if !slices.Equal(got, want) {
		t.Errorf("from the file:\n%s\nfrom ClickHouse:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	events := strings.Join(got, "\n")
	for _, e := range []string{" fire ", " escalate ", " resolve "} {
		if !strings.Contains(events, e) {
			t.Errorf("no%sin:\n%s", e, events)
		}
	}
}
