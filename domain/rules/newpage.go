package rules

import (
	"math"
	"time"
)

// NewPage fires for a page that had no views at all over Lookback before
// the window and passes MinCount within it: a new post taking off.
//
//	new_page: {lookback: 30d, min_count: 200}
type NewPage struct {
	Lookback Span   `yaml:"lookback"`
	MinCount uint64 `yaml:"min_count"`
}

// newPageDetector fires for a page with no views over the lookback that
// passes min_count.
type newPageDetector struct{ r *Rule }

func (d *newPageDetector) Kind() Kind      { return KindNewPage }
func (d *newPageDetector) Reach() Reach    { return Reach{} }
func (d *newPageDetector) LooksDown() bool { return false }

// QuietBelow is min_count × (1 − hysteresis).
func (d *newPageDetector) QuietBelow() uint64 {
	return uint64(math.Ceil(float64(d.r.NewPage.MinCount) * (1 - d.r.Rearm.Hysteresis)))
}

// Spans is the lookback, which ends where the window's first whole hour
// begins.
func (d *newPageDetector) Spans(end, dataStart time.Time) []Interval {
	to := end.Add(-d.r.Window.Rolling).UTC().Truncate(time.Hour)
	from := to.Add(-time.Duration(d.r.NewPage.Lookback))
	if from.Before(dataStart) {
		return nil
	}
	return []Interval{{From: from, To: to}}
}

// Expect is the views over the lookback.
func (d *newPageDetector) Expect(_ []Interval, counts []uint64, _ Trend) Expected {
	if len(counts) == 0 {
		return Expected{}
	}
	var sum uint64
	for _, c := range counts {
		sum += c
	}
	return Expected{Value: float64(sum), Samples: len(counts), OK: true}
}

func (d *newPageDetector) weigh(o Observation, _ *Episode) judgement {
	minCount := float64(d.r.NewPage.MinCount)
	// Once open the page has a past, so only min_count matters.
	fires := o.Expected.OK && o.Expected.Value == 0 && o.Count >= d.r.NewPage.MinCount
	return judgement{fires: fires, level: minCount, severity: float64(o.Count) / minCount, known: true}
}

func (d *newPageDetector) back(j judgement, o Observation, _ *Episode) bool {
	return float64(o.Count) < j.level*(1-d.r.Rearm.Hysteresis)
}

// HoldsLateDrops: no.
func (d *newPageDetector) HoldsLateDrops() bool { return false }

// Settled: unsure (its quiet level already leaves out what cannot matter).
func (d *newPageDetector) Settled(Observation) bool { return false }

// SettleKey: none, it never settles.
func (d *newPageDetector) SettleKey() string { return "" }

// Against: the views over the lookback.
func (d *newPageDetector) Against(o Observation, _ Firing) Against {
	return Against{Baseline: o.Expected.Value}
}
