package sweep

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// A page growing 8 % a week or so for 6 weeks (60, 66, ... 90 views an
// hour), with real ClickHouse, has its normal carried forward by its
// trend, which the sweep reads once a day from the page's days (sealed
// in page_days, the last ones from its minutes): a surge's why says the
// page's normal as it is now (90 an hour), not the median of its 4
// weeks' samples (75). A backtest over the same hours says the same.
func TestSweepFollowsAPagesTrendAsTheBacktestDoes(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = []rules.Rule{unusualBoth()}
	now := time.Now().UTC().Truncate(time.Hour)
	start := now.Add(-6 * 7 * 24 * time.Hour)
	for w := range 7 {
		perHour := 6 * int(math.Round(10*math.Pow(1.09, float64(w))))
		from := start.Add(time.Duration(w) * 7 * 24 * time.Hour)
		b.addSteady(t, "/grow", perHour, from, minTime(from.Add(7*24*time.Hour), now))
	}
	b.addSteady(t, "/grow", 300, now.Add(-time.Hour), now) // 4 × its hour
	b.addSteady(t, "/home", 60, now.Add(-time.Hour), now.Add(10*time.Minute))

	// Both judge the surge in its first half hour, from the same normal.
	at := now.Add(-45 * time.Minute)
	b.sweep(t, b.sweeper(t, &clock{t: at}))
	live := fireOf(t, b.jobs(t), "/grow")
	if live.Why.Baseline < 86 || live.Why.Baseline > 95 {
		t.Errorf("live normal %.1f, want about 90: the page as it is now, not the 75 of its samples", live.Why.Baseline)
	}
	if text := live.Why.ExpectedText(); !strings.Contains(text, "(same weekday), rising 8 % a week") {
		t.Errorf("its why %q, want it to say the trend", text)
	}

	xs, err := b.sweeper(t, &clock{t: now}).Backtest(context.Background(), now.Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	back := fireOf(t, xs, "/grow")
	if slotOf(back.CrossedAt) != slotOf(live.CrossedAt) {
		t.Fatalf("the backtest fired at %s, the sweep at %s: want the same half hour", back.CrossedAt, live.CrossedAt)
	}
	if back.Why.Baseline != live.Why.Baseline || back.Why.Low != live.Why.Low || back.Why.High != live.Why.High {
		t.Errorf("the backtest's normal %.2f (%.2f–%.2f), the sweep's %.2f (%.2f–%.2f): want the same",
			back.Why.Baseline, back.Why.Low, back.Why.High, live.Why.Baseline, live.Why.Low, live.Why.High)
	}
}

// fireOf is the one fire of path among xs.
func fireOf(t *testing.T, xs []crossing.Crossing, path string) crossing.Crossing {
	t.Helper()
	var fires []crossing.Crossing
	for _, x := range xs {
		if x.Event == "fire" && x.Path == path {
			fires = append(fires, x)
		}
	}
	if len(fires) != 1 || fires[0].Why == nil {
		t.Fatalf("fires of %s: %s; want one, with its why", path, describe(fires))
	}
	return fires[0]
}
