// Package chart draws the console's charts as SVG on the server: views
// over time with axes, units and the time zone, and the rules' thresholds
// and baselines as lines. Every text it writes (labels hold page paths and
// rule names, written by strangers) is escaped here, so its output may be
// put into a page as it is.
package chart

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"time"
)

// Point is one value at one time.
type Point struct {
	T time.Time
	V float64
}

// Line is a horizontal line: a threshold or a baseline.
type Line struct {
	Label string
	Value float64
	Class string // "threshold" or "baseline"
}

// Band is a range over time drawn behind the series: a page's usual
// range (the low and high of its normal at each time).
type Band struct {
	Label  string
	Points []BandPoint
}

// BandPoint is the band at one time.
type BandPoint struct {
	T         time.Time
	Low, High float64
}

// Series is a further series over the same times as Spec.Points (a
// page's visitors beside its views), drawn over it as a path of class
// "series-" + Class.
type Series struct {
	Label  string // its tooltip; the legend under the chart names it
	Class  string // letters and digits: a class name of ours
	Points []Point
}

// Mark is a moment on the time axis: a crossing. One with an Event
// (fire, escalate, resolve: an episode's) is drawn on the series at its
// time, a shape per event, with Short written beside it; one without, as
// a dot at the top of the plot.
type Mark struct {
	T     time.Time
	Label string
	Event string // "", fire, escalate or resolve
	Short string // a word or two drawn beside an event's mark
}

// Spec is one chart.
type Spec struct {
	// Title names the chart (its aria-label).
	Title string
	// Points are the series, oldest first, one per Step, zeros included.
	Points []Point
	// Others are drawn over Points, on the same axes.
	Others   []Series
	From, To time.Time
	Unit     string // the y axis: "views per minute"
	Zone     *time.Location
	Lines    []Line
	Band     *Band
	Marks    []Mark
	Width    int
	Height   int
}

const (
	padLeft   = 64
	padRight  = 16
	padTop    = 20
	padBottom = 44
)

// SVG draws the chart. The series is one path with class "series". The
// lines carry their labels as tooltips only, never as text in the plot:
// put the labels in a legend under the chart, as the console's page view does.
func SVG(s Spec) string {
	if s.Width == 0 {
		s.Width, s.Height = 960, 320
	}
	if s.Zone == nil {
		s.Zone = time.UTC
	}
	if !s.To.After(s.From) {
		s.To = s.From.Add(time.Hour)
	}
	maxV := 0.0
	for _, p := range s.Points {
		maxV = max(maxV, p.V)
	}
	for _, o := range s.Others {
		for _, p := range o.Points {
			maxV = max(maxV, p.V)
		}
	}
	for _, l := range s.Lines {
		maxV = max(maxV, l.Value)
	}
	if s.Band != nil {
		for _, p := range s.Band.Points {
			maxV = max(maxV, p.High)
		}
	}
	yTicks, top := niceTicks(maxV)
	plotW, plotH := float64(s.Width-padLeft-padRight), float64(s.Height-padTop-padBottom)
	x := func(t time.Time) float64 {
		return padLeft + plotW*float64(t.Sub(s.From))/float64(s.To.Sub(s.From))
	}
	y := func(v float64) float64 { return padTop + plotH*(1-v/top) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-testid="chart" role="img" aria-label="%s" viewBox="0 0 %d %d" width="%d" height="%d">`,
		esc(s.Title), s.Width, s.Height, s.Width, s.Height)
	fmt.Fprintf(&b, `<title>%s</title>`, esc(s.Title))
	for _, v := range yTicks {
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, padLeft, s.Width-padRight, y(v), y(v))
		fmt.Fprintf(&b, `<text class="ytick" x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, padLeft-6, y(v), esc(formatNum(v)))
	}
	for _, t := range timeTicks(s.From, s.To, s.Zone) {
		fmt.Fprintf(&b, `<line class="tick" x1="%.1f" x2="%.1f" y1="%d" y2="%d"/>`, x(t.t), x(t.t), s.Height-padBottom, s.Height-padBottom+4)
		fmt.Fprintf(&b, `<text class="xtick" x="%.1f" y="%d" text-anchor="middle">%s</text>`, x(t.t), s.Height-padBottom+16, esc(t.label))
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%d" x2="%d" y1="%d" y2="%d"/>`, padLeft, s.Width-padRight, s.Height-padBottom, s.Height-padBottom)
	fmt.Fprintf(&b, `<line class="axis" x1="%d" x2="%d" y1="%d" y2="%d"/>`, padLeft, padLeft, padTop, s.Height-padBottom)
	fmt.Fprintf(&b, `<text class="unit" x="12" y="%d" transform="rotate(-90 12 %d)" text-anchor="middle">%s</text>`,
		padTop+int(plotH/2), padTop+int(plotH/2), esc(s.Unit))
	fmt.Fprintf(&b, `<text class="zone" x="%d" y="%d" text-anchor="end">%s</text>`, s.Width-padRight, s.Height-6,
		esc("time ("+s.Zone.String()+")"))
	if s.Band != nil && len(s.Band.Points) > 0 {
		// Behind everything else: the high edge left to right, the low
		// edge back, closed.
		var d strings.Builder
		for i, p := range s.Band.Points {
			if i == 0 {
				d.WriteString("M")
			} else {
				d.WriteString(" L")
			}
			fmt.Fprintf(&d, "%.1f %.1f", x(p.T), y(p.High))
		}
		for i := len(s.Band.Points) - 1; i >= 0; i-- {
			p := s.Band.Points[i]
			fmt.Fprintf(&d, " L%.1f %.1f", x(p.T), y(p.Low))
		}
		fmt.Fprintf(&b, `<path class="band" data-testid="chart-band" d="%s Z"><title>%s</title></path>`, d.String(), esc(s.Band.Label))
	}
	for _, l := range s.Lines {
		cls := "threshold"
		if l.Class == "baseline" {
			cls = "baseline"
		}
		// No text beside the line: two lines close together (a small
		// threshold and a small normal, both near 0) would draw their
		// labels over each other. The labels are the legend under the
		// chart (the page's); here each line's label is its tooltip.
		fmt.Fprintf(&b, `<line class="%s" x1="%d" x2="%d" y1="%.1f" y2="%.1f"><title>%s</title></line>`, cls, padLeft, s.Width-padRight, y(l.Value), y(l.Value), esc(l.Label))
	}
	fmt.Fprintf(&b, `<path class="series" d="%s"/>`, pathOf(s.Points, x, y))
	for _, o := range s.Others {
		fmt.Fprintf(&b, `<path class="series-%s" data-testid="chart-%s" d="%s"><title>%s</title></path>`,
			esc(o.Class), esc(o.Class), pathOf(o.Points, x, y), esc(o.Label))
	}
	var placed []labelBox
	for _, m := range s.Marks {
		if m.T.Before(s.From) || m.T.After(s.To) {
			continue
		}
		if m.Event != "" {
			placed = episodeMark(&b, m, x(m.T), y(valueAt(s.Points, m.T)), placed, s.Width, s.Height)
			continue
		}
		// A rule down the plot at the moment, and a dot on its top: the
		// crossing is of the rule's window, not of one point's value, so it
		// is a time, named in the legend under the chart.
		fmt.Fprintf(&b, `<line class="crossing-rule" x1="%.1f" x2="%.1f" y1="%d" y2="%d"><title>%s</title></line>`, x(m.T), x(m.T), padTop, s.Height-padBottom, esc(m.Label))
		fmt.Fprintf(&b, `<circle class="crossing" cx="%.1f" cy="%d" r="4"><title>%s</title></circle>`, x(m.T), padTop, esc(m.Label))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// pathOf is the d attribute of a series' path: numbers only.
func pathOf(points []Point, x func(time.Time) float64, y func(float64) float64) string {
	var d strings.Builder
	for i, p := range points {
		if i == 0 {
			d.WriteString("M")
		} else {
			d.WriteString(" L")
		}
		fmt.Fprintf(&d, "%.1f %.1f", x(p.T), y(p.V))
	}
	if len(points) == 1 {
		fmt.Fprintf(&d, " L%.1f %.1f", x(points[0].T)+1, y(points[0].V))
	}
	return d.String()
}

// Spark returns the points attribute of a small polyline (width w,
// height h) through vals: numbers only, nothing to escape.
func Spark(vals []uint64, w, h float64) string {
	if len(vals) == 0 {
		return ""
	}
	top := uint64(1)
	for _, v := range vals {
		top = max(top, v)
	}
	var b strings.Builder
	step := w / float64(max(len(vals)-1, 1))
	for i, v := range vals {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", float64(i)*step, h-1-(h-2)*float64(v)/float64(top))
	}
	return b.String()
}

func esc(s string) string { return html.EscapeString(s) }

// niceTicks returns y ticks from 0 to a round top at or above maxV.
func niceTicks(maxV float64) ([]float64, float64) {
	if maxV <= 0 {
		maxV = 1
	}
	raw := maxV / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	step = max(step, 1)
	top := math.Ceil(maxV/step) * step
	var ticks []float64
	for v := 0.0; v <= top+step/2; v += step {
		ticks = append(ticks, v)
	}
	return ticks, top
}

func formatNum(v float64) string {
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

type tick struct {
	t     time.Time
	label string
}

// tickSteps are the spacings the time axis may use.
var tickSteps = []time.Duration{time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}

// timeTicks returns about six ticks at round times in zone.
func timeTicks(from, to time.Time, zone *time.Location) []tick {
	span := to.Sub(from)
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if span/s <= 7 {
			step = s
			break
		}
	}
	layout := "15:04"
	if step >= 24*time.Hour {
		layout = "Jan 2"
	} else if span > 24*time.Hour {
		layout = "Jan 2 15:04"
	}
	var out []tick
	t := from.In(zone)
	if step >= 24*time.Hour {
		t = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, zone)
	} else {
		_, off := t.Zone()
		sec := t.Unix() + int64(off)
		s := int64(step / time.Second)
		t = time.Unix(sec-sec%s-int64(off), 0).In(zone)
	}
	for ; !t.After(to); t = t.Add(step) {
		if t.Before(from) {
			continue
		}
		out = append(out, tick{t: t, label: t.Format(layout)})
	}
	return out
}

// labelBox is where an episode's label was written, so the next one
// close by is lifted above it rather than drawn over it.
type labelBox struct{ x0, x1, y float64 }

// episodeMark draws one episode's mark on the series at (cx, cy): a
// faint rule down the plot, a shape per event (a dot: fired, a
// triangle: escalated, a ring: resolved) and its short label above.
func episodeMark(b *strings.Builder, m Mark, cx, cy float64, placed []labelBox, width, height int) []labelBox {
	ev := "fire"
	switch m.Event {
	case "escalate", "resolve":
		ev = m.Event
	}
	title := esc(m.Label)
	fmt.Fprintf(b, `<g class="episode episode-%s" data-testid="chart-episode" data-event="%s">`, ev, ev)
	fmt.Fprintf(b, `<line class="crossing-rule" x1="%.1f" x2="%.1f" y1="%d" y2="%d"><title>%s</title></line>`, cx, cx, padTop, height-padBottom, title)
	switch ev {
	case "escalate":
		fmt.Fprintf(b, `<path class="episode-mark" d="M%.1f %.1f L%.1f %.1f L%.1f %.1f Z"><title>%s</title></path>`, cx, cy-6, cx+5.5, cy+4, cx-5.5, cy+4, title)
	default:
		fmt.Fprintf(b, `<circle class="episode-mark" cx="%.1f" cy="%.1f" r="5"><title>%s</title></circle>`, cx, cy, title)
	}
	// The label sits above the mark, lifted a line over any label it
	// would touch, and kept inside the plot: near either edge it moves
	// in rather than being cut off.
	w := 6.5*float64(len([]rune(m.Short))) + 8
	lx := min(max(cx, float64(padLeft)+w/2), float64(width-padRight)-w/2)
	// A mark near the top of the plot (a peak) may have no room above
	// it for its label, or for a second one: those go below the mark,
	// the way down checked for labels as the way up is.
	free := func(ly float64) bool {
		for _, p := range placed {
			if lx+w/2 > p.x0 && lx-w/2 < p.x1 && ly > p.y-13 && ly < p.y+13 {
				return false
			}
		}
		return true
	}
	ly := cy - 12
	for !free(ly) && ly >= padTop+10 {
		ly -= 14
	}
	if ly < padTop+10 {
		// Below the mark (its text clear of the mark's 6 px).
		ly = cy + 18
		for !free(ly) && ly < float64(height-padBottom) {
			ly += 14
		}
	}
	fmt.Fprintf(b, `<text class="episode-label" data-testid="chart-episode-label" x="%.1f" y="%.1f" text-anchor="middle">%s</text></g>`, lx, ly, esc(m.Short))
	return append(placed, labelBox{lx - w/2, lx + w/2, ly})
}

// valueAt is the series' value at t: the last point at or before it.
func valueAt(points []Point, t time.Time) float64 {
	v := 0.0
	for _, p := range points {
		if p.T.After(t) {
			break
		}
		v = p.V
	}
	return v
}
