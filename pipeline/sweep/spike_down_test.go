package sweep

import (
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// A page whose views fall to zero is seen by a live `down` rule: it has
// no row in the window, but it had views in the baseline period, and the
// sweep asks for the pages that had. A page that was quiet all along
// does not fire. The site's other page had a view minutes ago, so its
// data is on time.
func TestDownRuleSeesAPageGoneToZero(t *testing.T) {
	b, now := quietCheckout(t)
	b.addHits(t, "/home", 1, now.Add(-3*time.Minute))
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

// The same page with its whole site silent for a day: the site's data is
// late, not its page gone quiet, so a spike rule holds the drop as an
// unusual rule does and says "no data" once instead.
func TestSpikeDownHoldsDropsWhileItsSiteIsLate(t *testing.T) {
	b, now := quietCheckout(t)
	b.sweep(t, b.sweeper(t, &clock{t: now}))

	jobs := b.jobs(t)
	if len(jobs) != 1 || jobs[0].Why == nil || jobs[0].Why.Kind != crossing.KindNoData || jobs[0].Site != "example.com" {
		t.Fatalf("want one \"no data\" from example.com and no drop, got %d: %+v", len(jobs), jobs)
	}
}

// quietCheckout is a site whose /checkout had 20 views in the same hour
// of each of the last 3 days (a minute each) and none in the hour before now, and whose
// /rare had one view once, under a spike rule looking down.
func quietCheckout(t *testing.T) (*bundle, time.Time) {
	b := setup(t)
	b.cfg.Rules = []rules.Rule{{Name: "quiet", Site: "example.com", Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"),
		Spike: &rules.Spike{Factor: 4, MinCount: 10, Direction: rules.Down,
			Baseline: rules.Baseline{SameTime: &rules.SameTime{Days: 3}}},
		Rearm: rules.Rearm{Hysteresis: 0.5}, Notify: rules.Notify{Recipients: []string{"ops@example.com"}}}}
	now := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour + 10*time.Minute)
	b.addHits(t, "/checkout", 1, now.Add(-5*24*time.Hour)) // the data begins
	b.addHits(t, "/rare", 1, now.Add(-2*24*time.Hour-30*time.Minute))
	for k := 1; k <= 3; k++ {
		for i := range 20 { // a view a minute, as views come: not all in one minute
			b.addHits(t, "/checkout", 1, now.Add(-time.Duration(k)*24*time.Hour-time.Duration(30-i)*time.Minute))
		}
	}
	return b, now
}
