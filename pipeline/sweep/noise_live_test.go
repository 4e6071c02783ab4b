package sweep

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// Each page's own noise (rules.PageNoise) is read by the sweep once a
// day, in ClickHouse, from its sealed hours, and is the one the backtest
// reads from the same hours: two pages over 5 weeks, one steady at 60
// views an hour and one whose hours vary by a third, both surging to 15 ×
// in the last hour, fire in the same half hour live and in the backtest,
// from the same normal and range (the backtest's on minutes of hits, as
// a live site has, the one of 20:00 alone its own: it stood for 20:01 to
// 20:29 once). The noisy page's range is the wider. For a rule of one
// site and for one of every site, as the shipped file's is (whose noise
// was not read at first: the sweep asked for the sites its rules name).
func TestSweepReadsAPagesNoiseAsTheBacktestDoes(t *testing.T) {
	for _, site := range []string{"example.com", ""} {
		t.Run("site "+site, func(t *testing.T) {
			r := unusualBoth()
			r.Site = site
			sweepReadsAPagesNoise(t, r)
		})
	}
}

func sweepReadsAPagesNoise(t *testing.T, r rules.Rule) {
	b := setup(t)
	b.cfg.Rules = []rules.Rule{r}
	now := time.Now().UTC().Truncate(time.Hour)
	start := now.Add(-5 * 7 * 24 * time.Hour)
	rng := rand.New(rand.NewPCG(5, 7))
	hours := map[string]map[int64]float64{"/steady": {}, "/noisy": {}}
	b.seq++
	batch := hit.Batch{Seq: b.seq}
	add := func(path string, at time.Time, n int) {
		hours[path][at.Unix()] += float64(n)
		for i := range n {
			batch.Hits = append(batch.Hits, hit.Hit{Time: at.Add(time.Duration(i%60) * time.Minute), Site: "example.com", Path: path, Offset: uint64(len(batch.Hits))})
		}
	}
	for at := start; at.Before(now.Add(-time.Hour)); at = at.Add(time.Hour) {
		add("/steady", at, 60)
		add("/noisy", at, int(math.Round(60*(0.65+0.7*rng.Float64()))))
	}
	add("/steady", now.Add(-time.Hour), 900)
	add("/noisy", now.Add(-time.Hour), 900)
	if err := b.ch.Hits().InsertHits(context.Background(), []hit.Batch{batch}); err != nil {
		t.Fatal(err)
	}

	at := now.Add(-45 * time.Minute)
	s := b.sweeper(t, &clock{t: at})
	b.sweep(t, s)
	jobs := b.jobs(t)
	from := rules.TrendFrom(at)
	nf, weeks := rules.NoiseHours(at, start)
	if weeks != rules.NoiseWeeks {
		t.Fatalf("%d weeks of hours for the noise, want %d", weeks, rules.NoiseWeeks)
	}
	for path, v := range hours {
		want, ok := rules.PageNoise(rules.HourSlots(nf, weeks, func(h time.Time) float64 { return v[h.Unix()] }))
		got := s.baselines.trends[from][page{"example.com", path}]
		if !ok || !got.NoiseOK || math.Abs(got.Noise-want) > 1e-9 {
			t.Errorf("%s: the sweep read noise %v (%v), want %v (%v)", path, got.Noise, got.NoiseOK, want, ok)
		}
	}

	xs, err := b.sweeper(t, &clock{t: now}).Backtest(context.Background(), now.Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	width := map[string]float64{}
	for _, path := range []string{"/steady", "/noisy"} {
		live, back := fireOf(t, jobs, path), fireOf(t, xs, path)
		if slotOf(back.CrossedAt) != slotOf(live.CrossedAt) {
			t.Errorf("%s: the backtest fired at %s, the sweep at %s: want the same half hour", path, back.CrossedAt, live.CrossedAt)
		}
		if back.Why.Baseline != live.Why.Baseline || back.Why.Low != live.Why.Low || back.Why.High != live.Why.High {
			t.Errorf("%s: the backtest's normal %.2f (%.2f–%.2f), the sweep's %.2f (%.2f–%.2f): want the same", path,
				back.Why.Baseline, back.Why.Low, back.Why.High, live.Why.Baseline, live.Why.Low, live.Why.High)
		}
		width[path] = (live.Why.High - live.Why.Low) / live.Why.Baseline
	}
	if width["/noisy"] <= width["/steady"] {
		t.Errorf("the noisy page's range is %.2f of its normal, the steady page's %.2f: want it wider", width["/noisy"], width["/steady"])
	}
}
