package console

import (
	"context"
	"fmt"
	"time"

	"github.com/pagewatch/pagewatch/console/chart"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// bandView is a page's usual range over the chart's range, as the first
// rule watching it that has one (an unusual rule) sees it: the band drawn
// behind the line.
type bandView struct {
	Rule   string      `json:"rule"`
	Label  string      `json:"label"`
	Points []bandPoint `json:"points"`
}

type bandPoint struct {
	T    time.Time `json:"t"`
	Low  float64   `json:"low"`  // views per step
	High float64   `json:"high"` // views per step
}

// pageBand computes the band at each step of [from, to): the rule's
// normal for its window ending with the step, from the page's hourly
// views, scaled to the step. Nil when no rule watching the page has a
// usual range, or the page has no history.
func (s *pagePages) pageBand(ctx context.Context, site, path string, from, to time.Time, step time.Duration) (*bandView, error) {
	rs := s.deps.Rules()
	for i := range rs {
		r := &rs[i]
		if !r.Matches(site, path) || r.Aggregate == rules.Sum || r.Window.Kind != rules.Rolling || len(r.BaselineSpans(to, time.Time{})) == 0 {
			continue
		}
		b, err := s.ruleBand(ctx, r, site, path, from, to, step)
		if b != nil || err != nil {
			return b, err
		}
	}
	return nil, nil
}

// ruleBand is pageBand for one rule: nil when its normal has no usual
// range (spike, new_page) or the page no history.
func (s *pagePages) ruleBand(ctx context.Context, rule *rules.Rule, site, path string, from, to time.Time, step time.Duration) (*bandView, error) {
	start, err := s.starts.of(ctx, site)
	if err != nil {
		return nil, err
	}
	hours, err := readHours(ctx, s.deps.Store, rule, site, path, from.Add(step), to, start, clockOf(ctx, s.clocks, rule, site, s.deps.Now()))
	if err != nil || hours.start.IsZero() {
		return nil, err
	}
	// A page that rose for good is judged at its new level: drawn so.
	level, err := levelOf(ctx, s.deps.RuleStates, rule, site, path)
	if err != nil {
		return nil, err
	}
	scale := float64(step) / float64(rule.Window.Rolling)
	b := &bandView{Rule: rule.Name, Label: fmt.Sprintf("%s: the page's usual range, in views per %s", rule.Name, stepName(step))}
	for t := from; t.Before(to); t = t.Add(step) {
		e := rules.AtLevel(rule, level, hours.expectAt(rule, t.Add(step)), t.Add(step))
		if !e.OK || e.High <= 0 {
			continue
		}
		b.Points = append(b.Points, bandPoint{T: t, Low: e.Low * scale, High: e.High * scale})
	}
	if len(b.Points) == 0 {
		return nil, nil
	}
	return b, nil
}

// chartBand is v's band for the chart package.
func chartBand(v *bandView) *chart.Band {
	if v == nil {
		return nil
	}
	out := &chart.Band{Label: v.Label}
	for _, p := range v.Points {
		out.Points = append(out.Points, chart.BandPoint{T: p.T, Low: p.Low, High: p.High})
	}
	return out
}

// levelOf is the new level the sweeper judges a page that rose for good
// at (nil: none, or no sweeper's state to read). The band, the rules
// page and the live view all draw the page's normal at it, as the sweep
// judges it: a page at 2.5 × its old normal for a week is at its usual,
// not "above its usual range, no episode".
func levelOf(ctx context.Context, states RuleStates, rule *rules.Rule, site, path string) (*rules.Raised, error) {
	if states == nil || rule.Unusual == nil {
		return nil, nil
	}
	st, ok, err := states.State(ctx, rule.Name, site, path, false)
	if err != nil || !ok {
		return nil, err
	}
	return st.Level, nil
}
