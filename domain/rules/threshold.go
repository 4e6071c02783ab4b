package rules

import "time"

// thresholdDetector is a fixed number of views: no normal, no past.
type thresholdDetector struct{ r *Rule }

func (d *thresholdDetector) Kind() Kind                                  { return KindThreshold }
func (d *thresholdDetector) Spans(end, dataStart time.Time) []Interval   { return nil }
func (d *thresholdDetector) Expect([]Interval, []uint64, Trend) Expected { return Expected{} }
func (d *thresholdDetector) Reach() Reach                                { return Reach{} }
func (d *thresholdDetector) LooksDown() bool                             { return false }

// QuietBelow is the re-arm level plus one: a count at or under it
// neither fires nor holds the threshold disarmed.
func (d *thresholdDetector) QuietBelow() uint64 { return d.r.RearmLevel(d.r.Thresholds[0]) + 1 }

func (d *thresholdDetector) weigh(o Observation, _ *Episode) judgement {
	t := float64(d.r.Thresholds[0])
	return judgement{fires: Crossed(o.Count, d.r.Thresholds[0]), level: t, severity: float64(o.Count) / t, known: true}
}

func (d *thresholdDetector) back(_ judgement, o Observation, _ *Episode) bool {
	return o.Count <= d.r.RearmLevel(d.r.Thresholds[0])
}

// HoldsLateDrops: no.
func (d *thresholdDetector) HoldsLateDrops() bool { return false }

// Settled: unsure (its quiet level already leaves out what cannot matter).
func (d *thresholdDetector) Settled(Observation) bool { return false }

// SettleKey: none, it never settles.
func (d *thresholdDetector) SettleKey() string { return "" }

// Against: the level crossed.
func (d *thresholdDetector) Against(_ Observation, f Firing) Against {
	return Against{Baseline: float64(f.Threshold)}
}
