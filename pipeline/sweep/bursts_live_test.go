package sweep

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// addSend loads a newsletter's send at at: n views over its first 20
// minutes.
func (b *bundle) addSend(t *testing.T, path string, n int, at time.Time) {
	t.Helper()
	for m := range 4 {
		b.addHits(t, path, n/4, at.Add(time.Duration(m)*5*time.Minute))
	}
}

// A newsletter's page, at nothing between its sends, has its sends as
// its normal, with real ClickHouse and NATS: its first two are told (a
// new page, then a send of which it knows one), then five of about 300
// views are nothing, and a sixth of 350, past the second highest of
// its others by more than a noise unit but not past what they reach but
// 1 in 50 (against the second highest, the 4th and the 7th were
// told). A send of 3,000, judged by four sweepers racing, is one fire,
// its why naming its bursts; a backtest over the same hours tells the
// same sends.
func TestSweepJudgesANewsletterAgainstItsSends(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = []rules.Rule{unusualBoth()}
	start := time.Now().UTC().Truncate(time.Hour).Add(-21 * 24 * time.Hour)
	b.addSteady(t, "/", 60, start.Add(-7*24*time.Hour), time.Now().UTC().Add(time.Hour))
	c := &clock{t: start}
	s := b.sweeper(t, c)
	sweepAround := func(at time.Time) {
		for _, d := range []time.Duration{10, 20, 30, 60, 120, 180, 240} {
			c.set(at.Add(d * time.Minute))
			b.sweep(t, s)
		}
	}
	sends := []int{300, 340, 280, 320, 310, 290, 350}
	var at time.Time
	for i, n := range sends {
		at = start.Add(time.Duration(i) * 60 * time.Hour)
		b.addSend(t, "/newsletter", n, at)
		sweepAround(at)
	}
	var told []string
	for _, x := range b.jobs(t) {
		told = append(told, x.Event+" "+x.CrossedAt.Sub(start).Truncate(time.Hour).String())
	}
	if want := []string{"fire 0s", "resolve 3h0m0s", "fire 60h0m0s", "resolve 63h0m0s"}; !slices.Equal(told, want) {
		t.Fatalf("seven sends of about 300: %v; want the first two told and resolved, then nothing", told)
	}

	big := at.Add(60 * time.Hour)
	b.addHits(t, "/newsletter", 3000, big)
	c.set(big.Add(5 * time.Minute))
	b.raceSweeps(t, c, 4)
	var fires []crossing.Crossing
	for _, x := range b.jobs(t) {
		if x.Event == "fire" && x.CrossedAt.After(at) {
			fires = append(fires, x)
		}
	}
	if len(fires) != 1 {
		t.Fatalf("a send of 3,000: %s; want one fire", describe(fires))
	}
	if w := fires[0].Why; w.Bursts != 7 || w.BurstsPassed < 350 || w.BurstsPassed > 525 ||
		!strings.Contains(w.ExpectedText(), "; its bursts are its normal: past what its 7 bursts in 4 weeks reach (") {
		t.Errorf("its why: %d bursts, passed %d, %q; want past what its 7 sends before reach, between the highest and 1.5 × it", w.Bursts, w.BurstsPassed, w.ExpectedText())
	}

	// A backtest over the same days tells the same sends.
	xs, err := b.sweeper(t, &clock{t: big.Add(time.Hour)}).Backtest(context.Background(), start.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var backtold []string
	for _, x := range xs {
		if x.Event == "fire" && x.Path == "/newsletter" {
			backtold = append(backtold, x.CrossedAt.Sub(start).Truncate(time.Hour).String())
		}
	}
	if want := []string{"0s", "60h0m0s", (big.Sub(start)).String()}; !slices.Equal(backtold, want) {
		t.Errorf("the backtest told the sends at %v, want %v", backtold, want)
	}
}
