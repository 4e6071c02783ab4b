package sweep

import (
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
)

// A page whose views fall to zero is seen by a live `down` rule: it has
// no row in the window, but it had views in the baseline period, and the
// sweep asks for the pages that had. A page that was quiet all along
// does not fire.
func TestDownRuleSeesAPageGoneToZero(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = []rules.Rule{{Name: "quiet", Site: "example.com", Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"),
		Spike: &rules.Spike{Factor: 4, MinCount: 10, Direction: rules.Down,
			Baseline: rules.Baseline{SameTime: &rules.SameTime{Days: 3}}},
		Rearm: rules.Rearm{Hysteresis: 0.5}, Notify: rules.Notify{Recipients: []string{"ops@example.com"}}}}
	now := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour + 10*time.Minute)
	b.addHits(t, "/checkout", 1, now.Add(-5*24*time.Hour)) // the data begins
	b.addHits(t, "/rare", 1, now.Add(-2*24*time.Hour-30*time.Minute))
	for k := 1; k <= 3; k++ {
		b.addHits(t, "/checkout", 20, now.Add(-time.Duration(k)*24*time.Hour-30*time.Minute))
	}
	// The hour before now: no views of either page at all.
	b.sweep(t, b.sweeper(t, &clock{t: now}))

	jobs := b.jobs(t)
	if len(jobs) != 1 {
		t.Fatalf("want one crossing (/checkout went quiet), got %d: %+v", len(jobs), jobs)
	}
	x := jobs[0]
	if x.Path != "/checkout" || x.Count != 0 || x.Why == nil || x.Why.Direction != "down" || x.Why.Baseline != 20 {
		t.Errorf("crossing %+v, why %+v; want /checkout down from 20 to 0", x, x.Why)
	}
}
