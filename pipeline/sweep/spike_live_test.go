package sweep

import (
	"context"
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
