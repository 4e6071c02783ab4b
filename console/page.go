package console

import (
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/pagewatch/pagewatch/console/chart"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// pageRange is a span the page view offers, and the step it is drawn in.
type pageRange struct {
	Name string
	Span time.Duration
	Step time.Duration
}

var pageRanges = []pageRange{
	{"1h", time.Hour, time.Minute},
	{"6h", 6 * time.Hour, time.Minute},
	{"24h", 24 * time.Hour, time.Minute},
	{"7d", 7 * 24 * time.Hour, time.Hour},
	{"30d", 30 * 24 * time.Hour, time.Hour},
}

type pageView struct {
	Site   string        `json:"site"`
	Path   string        `json:"path"`
	Range  string        `json:"range"`
	Ranges []string      `json:"-"`
	Step   string        `json:"step"` // minute or hour
	From   time.Time     `json:"from"`
	To     time.Time     `json:"to"`
	Series []seriesPoint `json:"series"`
	Total  uint64        `json:"total"`
	// Classes are the range's hits per client class; nil without any.
	Classes *classesView `json:"classes"`
	// Held are the rules whose surge on the page the client guard holds.
	Held []heldView `json:"held"`
	// Visitors: some step has visitors (else the chart draws no line of
	// them, rather than a flat 0 where no client was keyed).
	Visitors bool        `json:"-"`
	Lines    []chartLine `json:"lines"`
	// Band is the page's usual range, for a rule that has one.
	Band  *bandView     `json:"band,omitempty"`
	Chart template.HTML `json:"-"`
	// Marks are the crossings marked on the chart (episodes' fire,
	// escalate, resolve), for its legend.
	Marks     []markView     `json:"-"`
	Referrers []referrerView `json:"referrers"`
	// ReferrerSpan is the span the referrers are counted over, the
	// range's last day at most, against the span before it.
	ReferrerSpan string         `json:"referrer_span"`
	Crossings    []crossingView `json:"crossings"`
}

type seriesPoint struct {
	T     time.Time `json:"t"`
	Views uint64    `json:"views"`
	// Visitors are the distinct client keys among the step's views.
	Visitors uint64 `json:"visitors"`
}

type chartLine struct {
	Kind  string  `json:"kind"` // threshold or baseline
	Rule  string  `json:"rule,omitempty"`
	Label string  `json:"label"`
	Value float64 `json:"per_step"`
}

type referrerView struct {
	Referer string `json:"referer"`
	Views   uint64 `json:"views"`
	Before  uint64 `json:"before"` // in the span just before
	Change  string `json:"change"`
}

// pagePages are one page's views, referrers, and its rules' bands.
type pagePages struct{ *frame }

func (s *pagePages) pagePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	site, path := q.Get("site"), q.Get("path")
	if site == "" || path == "" {
		s.fail(w, r, http.StatusBadRequest, "site and path are required")
		return
	}
	rg := pageRanges[0]
	if name := q.Get("range"); name != "" {
		found := false
		for _, c := range pageRanges {
			if c.Name == name {
				rg, found = c, true
			}
		}
		if !found {
			s.fail(w, r, http.StatusBadRequest, "range: must be 1h, 6h, 24h, 7d or 30d")
			return
		}
	}
	ctx := r.Context()
	now := s.deps.Now()
	to := now.Truncate(rg.Step).Add(rg.Step)
	from := to.Add(-rg.Span)
	v := pageView{Site: site, Path: path, Range: rg.Name, From: from, To: to, Step: stepName(rg.Step)}
	for _, c := range pageRanges {
		v.Ranges = append(v.Ranges, c.Name)
	}
	// Referrers are read from the raw hits: at most the range's last day
	// against the day before, so a busy page's month is not grouped.
	refFrom := from
	if to.Sub(from) > 24*time.Hour {
		refFrom = to.Add(-24 * time.Hour)
	}
	v.ReferrerSpan = shortDuration(to.Sub(refFrom))
	// The reads are independent: made at once, the page waits for the
	// slowest, not for their sum.
	var (
		raw, visitors []traffic.MinuteHits
		classes       []ClassCount
		whys          map[string]crossing.Why
	)
	err := together(
		func() (err error) {
			if rg.Step == time.Minute {
				raw, err = s.deps.Store.PageSeries(ctx, site, path, from, to)
			} else {
				raw, err = s.deps.Store.PageHourSeries(ctx, site, path, from, to)
			}
			return wrap("the page's views", err)
		},
		func() (err error) {
			visitors, err = s.deps.Store.PageVisitors(ctx, site, path, from, to, rg.Step)
			return wrap("the page's visitors", err)
		},
		func() (err error) {
			classes, err = s.deps.Store.PageClasses(ctx, site, path, from, to)
			return wrap("the page's client classes", err)
		},
		func() (err error) {
			budget := maxPageHeldRules
			v.Held, err = heldOf(ctx, s.deps.RuleStates, s.deps.Rules(), site, path, &budget)
			return wrap("the page's held surges", err)
		},
		func() (err error) {
			v.Lines, err = s.pageLines(r, site, path, rg.Step)
			return wrap("the page's normal", err)
		},
		func() (err error) {
			v.Band, err = s.pageBand(ctx, site, path, from, to, rg.Step)
			return wrap("the page's usual range", err)
		},
		func() (err error) {
			v.Referrers, err = s.referrers(r, site, path, refFrom, to)
			return wrap("the page's referrers", err)
		},
		func() error {
			xs, err := s.deps.Store.Crossings(ctx, HistoryQuery{Site: site, Path: path, From: now.Add(-defaultHistorySpan), To: now.Add(time.Minute), Limit: 20})
			if err != nil {
				return wrap("the page's crossings", err)
			}
			if v.Crossings, err = s.withOutcomes(r, xs); err != nil {
				return wrap("the page's notifications", err)
			}
			whys, err = s.whysOf(ctx, v.Crossings)
			withJudged(v.Crossings, whys)
			return wrap("why the page's crossings were made", err)
		},
	)
	if err != nil {
		s.failErr(w, r, "reading the page", err)
		return
	}
	v.Series = fill(raw, from, to, rg.Step)
	v.Visitors = addVisitors(v.Series, visitors, rg.Step)
	v.Classes = classShares(classes)
	for _, p := range v.Series {
		v.Total += p.Views
	}
	if !isAPI(r) {
		v.Chart, v.Marks = s.drawPage(v, rg, whys)
	}
	s.render(w, r, "page", path, v)
}

// fill gives every step in [from, to) a point, 0 where ClickHouse has
// no row.
func fill(raw []traffic.MinuteHits, from, to time.Time, step time.Duration) []seriesPoint {
	by := map[int64]uint64{}
	for _, m := range raw {
		by[m.Minute.Truncate(step).Unix()] += m.Hits
	}
	out := make([]seriesPoint, 0, int(to.Sub(from)/step))
	for t := from; t.Before(to); t = t.Add(step) {
		out = append(out, seriesPoint{T: t, Views: by[t.Unix()]})
	}
	return out
}

// pageLines are the thresholds of the rules watching the page, and its
// normal, in views per step: a rule counts over its window, the chart
// per minute or hour, so a threshold is drawn as the even rate that
// would reach it ("1000 in 1h" is 16.7 a minute).
func (s *pagePages) pageLines(r *http.Request, site, path string, step time.Duration) ([]chartLine, error) {
	out := []chartLine{}
	for _, rule := range s.deps.Rules() {
		if !rule.Matches(site, path) || rule.Aggregate == rules.Sum {
			continue
		}
		win := windowLength(rule.Window)
		if win == 0 || len(rule.Thresholds) == 0 {
			continue
		}
		perStep := float64(rule.Thresholds[0]) * float64(step) / float64(win)
		what := "views"
		if rule.Count == rules.CountVisitors {
			what = "visitors"
		}
		out = append(out, chartLine{Kind: "threshold", Rule: rule.Name, Value: perStep,
			Label: fmt.Sprintf("%s: more than %s %s in %s (%s per %s on average)", rule.Name, traffic.FormatCount(rule.Thresholds[0]), what, windowText(rule.Window), formatRate(perStep), stepName(step))})
	}
	// The page's normal, as the live view computes it: a 24th of its
	// median day over the last 7 whole days (page_days, by key).
	from, to := baselineSpan(s.deps.Now())
	days, err := s.deps.Store.DayTotals(r.Context(), []string{site}, []string{path}, from, to)
	if err != nil {
		return nil, err
	}
	var vals []float64
	for _, d := range days {
		vals = append(vals, float64(d.Hits))
	}
	if len(vals) > 0 {
		perHour := normalPerHour(vals)
		out = append(out, chartLine{Kind: "baseline", Value: perHour * float64(step) / float64(time.Hour),
			Label: fmt.Sprintf("normal: %s views an hour (a 24th of the median day of the last 7)", traffic.FormatCount(uint64(math.Round(perHour))))})
	}
	return out, nil
}

// formatRate writes a threshold's even rate: one decimal ("16.7"), and
// two significant digits under 1, so "more than 2 in 1h" reads 0.033 a
// minute, not "0.0".
func formatRate(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 1:
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func stepName(step time.Duration) string {
	if step == time.Hour {
		return "hour"
	}
	return "minute"
}

func windowLength(w rules.Window) time.Duration {
	switch w.Kind {
	case rules.Rolling:
		return w.Rolling
	case rules.Calendar:
		switch w.Calendar {
		case rules.Day:
			return 24 * time.Hour
		case rules.Week:
			return 7 * 24 * time.Hour
		case rules.Month:
			return 30 * 24 * time.Hour
		}
	}
	return 0
}

func windowText(w rules.Window) string {
	switch w.Kind {
	case rules.Rolling:
		return shortDuration(w.Rolling)
	case rules.Calendar:
		return string(w.Calendar)
	}
	return "all time"
}

// referrers are the page's top referrers in the span and the span
// before it.
func (s *pagePages) referrers(r *http.Request, site, path string, from, to time.Time) ([]referrerView, error) {
	now, err := s.deps.Store.TopReferrers(r.Context(), site, path, from, to, 10)
	if err != nil {
		return nil, err
	}
	before, err := s.deps.Store.TopReferrers(r.Context(), site, path, from.Add(-to.Sub(from)), from, 100)
	if err != nil {
		return nil, err
	}
	prev := map[string]uint64{}
	for _, b := range before {
		prev[b.Referer] = b.Hits
	}
	out := []referrerView{}
	for _, n := range now {
		rv := referrerView{Referer: n.Referer, Views: n.Hits, Before: prev[n.Referer]}
		if rv.Before == 0 {
			rv.Change = "new"
		} else {
			rv.Change = fmt.Sprintf("%+.0f%%", (float64(rv.Views)/float64(rv.Before)-1)*100)
		}
		out = append(out, rv)
	}
	return out, nil
}

// drawPage draws the page's chart, and names the crossings it marks:
// oldest first, as the legend reads left to right.
func (s *pagePages) drawPage(v pageView, rg pageRange, whys map[string]crossing.Why) (template.HTML, []markView) {
	spec := chart.Spec{Title: "Views and visitors per " + stepName(rg.Step) + " of " + v.Site + v.Path, From: v.From, To: v.To,
		Unit: "views, visitors per " + stepName(rg.Step), Zone: s.zone}
	vis := chart.Series{Label: "visitors per " + stepName(rg.Step), Class: "visitors"}
	for _, p := range v.Series {
		spec.Points = append(spec.Points, chart.Point{T: p.T, V: float64(p.Views)})
		vis.Points = append(vis.Points, chart.Point{T: p.T, V: float64(p.Visitors)})
	}
	if v.Visitors {
		spec.Others = []chart.Series{vis}
	}
	for _, l := range v.Lines {
		spec.Lines = append(spec.Lines, chart.Line{Label: l.Label, Value: l.Value, Class: l.Kind})
	}
	spec.Band = chartBand(v.Band)
	var marks []markView
	for i := len(v.Crossings) - 1; i >= 0; i-- {
		x := v.Crossings[i]
		if x.CrossedAt.Before(v.From) || x.CrossedAt.After(v.To) {
			continue
		}
		var why *crossing.Why
		if w, ok := whys[x.Key]; ok {
			why = &w
		}
		m := markOf(x, why)
		cm := chart.Mark{T: x.CrossedAt, Label: m.Label}
		if !why.ByThreshold() {
			cm.Event, cm.Short = m.Event, m.Short
		}
		spec.Marks = append(spec.Marks, cm)
		marks = append(marks, m)
	}
	// chart.SVG escapes every text it writes (see its package comment).
	return template.HTML(chart.SVG(spec)), marks
}

// shortDuration writes a window as rules are written: "1h", not "1h0m0s".
func shortDuration(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

func wrap(what string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
