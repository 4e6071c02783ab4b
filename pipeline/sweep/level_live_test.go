package sweep

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
)

// A page that rises for good, live (NATS, ClickHouse): two sweepers
// racing, catching up a day at a time over its rise and the days it
// holds there, tell the rise once and its new level once ("not back",
// 3 × its normal); back at its old level, raced again, "back to its old
// level" once, 6 hours on, keyed by the episode that raised it. The state that
// carries the level between sweeps (its steps, a surge's hours) goes
// through the KV store as JSON each time.
func TestUnusualNewLevelLiveOnceEach(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = []rules.Rule{unusualBoth()}
	rise := time.Now().UTC().Truncate(time.Hour).Add(-4 * 24 * time.Hour)
	back := rise.Add(3 * 24 * time.Hour)
	b.addSteady(t, "/home", 600, rise.Add(-22*24*time.Hour), rise) // 3 weeks: its normal reads past weeks alone
	b.addSteady(t, "/home", 1800, rise, back)
	b.addSteady(t, "/home", 600, back, back.Add(53*time.Hour))
	c := &clock{t: rise.Add(-5 * time.Minute)}
	b.sweep(t, b.sweeper(t, c))
	for _, at := range []time.Duration{20 * time.Hour, 40 * time.Hour, 60 * time.Hour, 72*time.Hour + 3*time.Hour, 100 * time.Hour, 124 * time.Hour} {
		c.set(rise.Add(at)) // a sweeper down for up to 20 hours, then two catching up
		b.raceSweeps(t, c, 2)
	}
	var got []string
	for _, x := range b.jobs(t) {
		key := x.Key[strings.LastIndex(x.Key, ".unusual.")+1:]
		key = key[strings.Index(key, ".")+1:]
		key = key[strings.Index(key, ".")+1:] // the rule's and page's parts off: "1", "1.resolved"
		got = append(got, fmt.Sprintf("%s %s at +%s key %s new_normal %v level %.1f ended %v",
			x.Path, x.Event, x.CrossedAt.Sub(rise).Truncate(time.Hour), key, x.Why.NewNormal, x.Why.Raised, x.Why.LevelEnded))
	}
	want := []string{
		"/home fire at +0s key 1 new_normal false level 0.0 ended false",
		"/home resolve at +48h0m0s key 1.resolved new_normal true level 3.0 ended false",
		"/home resolve at +78h0m0s key 1.level.resolved new_normal false level 3.0 ended true", // 6 hours back
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("jobs:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
