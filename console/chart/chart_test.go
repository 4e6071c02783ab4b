package chart

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLabelsAreEscaped(t *testing.T) {
	from := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	svg := SVG(Spec{Title: `/"><img src=x onerror=alert(1)>`, From: from, To: from.Add(time.Hour), Unit: "views per minute",
		Points: []Point{{T: from, V: 1}, {T: from.Add(time.Minute), V: 3}},
		Lines:  []Line{{Label: "/<script>alert(1)</script>", Value: 2, Class: "threshold"}},
		Marks:  []Mark{{T: from.Add(time.Minute), Label: "<b>x</b>"}}})
	for _, bad := range []string{"<img", "<script", "<b>"} {
		if strings.Contains(svg, bad) {
			t.Errorf("SVG holds %q:\n%s", bad, svg)
		}
	}
	for _, want := range []string{`data-testid="chart"`, `<path class="series" d="M`, "time (UTC)", "views per minute", "&lt;script&gt;",
		// The crossing: a rule down the plot at its time, and a dot on it.
		`<line class="crossing-rule" x1="78.7" x2="78.7" y1="20" y2="276">`, `<circle class="crossing" cx="78.7"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q:\n%s", want, svg)
		}
	}
}

func TestTimeTicksAreRoundInTheZone(t *testing.T) {
	zone, err := time.LoadLocation("Asia/Kolkata") // UTC+5:30: round hours there are not round in UTC
	if err != nil {
		t.Skip(err)
	}
	from := time.Date(2026, 11, 24, 10, 7, 0, 0, time.UTC)
	ticks := timeTicks(from, from.Add(6*time.Hour), zone)
	if len(ticks) < 3 {
		t.Fatalf("ticks %v", ticks)
	}
	for _, tk := range ticks {
		if l := tk.t.In(zone); l.Minute() != 0 || tk.label != l.Format("15:04") {
			t.Errorf("tick %s (%s) not on a round hour in %s", tk.t, tk.label, zone)
		}
	}
}

// TestLineLabelsNeverOverlap: a threshold and a normal both near 0 once
// drew their labels over each other; the plot holds no label text now
// (the labels are the page's legend), only each line's escaped tooltip.
func TestLineLabelsNeverOverlap(t *testing.T) {
	from := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	svg := SVG(Spec{Title: "t", From: from, To: from.Add(time.Hour), Unit: "views per minute",
		Points: []Point{{T: from, V: 0}},
		Lines: []Line{{Label: "rule <a>: more than 2 in 1h", Value: 0.03, Class: "threshold"},
			{Label: "normal: 0 an hour", Value: 0, Class: "baseline"}}})
	if strings.Contains(svg, "label-") {
		t.Errorf("SVG draws line labels as text in the plot:\n%s", svg)
	}
	for _, want := range []string{"<title>rule &lt;a&gt;: more than 2 in 1h</title>", "<title>normal: 0 an hour</title>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q:\n%s", want, svg)
		}
	}
}

// A second series (a page's visitors beside its views) is its own path
// on the same axes, which reach its largest value, with its label
// escaped as its tooltip.
func TestOtherSeries(t *testing.T) {
	from := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	svg := SVG(Spec{Title: "t", From: from, To: from.Add(2 * time.Minute), Unit: "per minute",
		Points: []Point{{T: from, V: 1}, {T: from.Add(time.Minute), V: 3}},
		Others: []Series{{Label: "visitors <b>", Class: "visitors", Points: []Point{{T: from, V: 1}, {T: from.Add(time.Minute), V: 9}}}}})
	for _, want := range []string{`<path class="series" d="M`, `<path class="series-visitors" data-testid="chart-visitors" d="M`,
		"<title>visitors &lt;b&gt;</title>", ">10<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q:\n%s", want, svg)
		}
	}
	if strings.Contains(svg, "<b>") {
		t.Errorf("SVG holds the label unescaped:\n%s", svg)
	}
}

// Marks at a peak (a fire and its escalation minutes apart on a week's
// chart, at the top of the plot) have no room above for two labels: the
// second goes below, and neither is drawn over the other.
func TestEpisodeLabelsAtAPeakDoNotOverlap(t *testing.T) {
	from := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	var pts []Point
	for h := range 7 * 24 {
		v := 10.0
		if h == 150 {
			v = 580 // near the top of an axis to 600
		}
		pts = append(pts, Point{T: from.Add(time.Duration(h) * time.Hour), V: v})
	}
	peak := from.Add(150 * time.Hour)
	svg := SVG(Spec{Title: "t", From: from, To: from.Add(7 * 24 * time.Hour), Unit: "views per hour", Points: pts,
		Marks: []Mark{{T: peak.Add(16 * time.Minute), Event: "fire", Short: "fire"},
			{T: peak.Add(18 * time.Minute), Event: "escalate", Short: "escalate ×4"}}})
	re := regexp.MustCompile(`class="episode-label" data-testid="chart-episode-label" x="([0-9.]+)" y="([0-9.]+)"`)
	m := re.FindAllStringSubmatch(svg, -1)
	if len(m) != 2 {
		t.Fatalf("%d labels, want 2:\n%s", len(m), svg)
	}
	y0, _ := strconv.ParseFloat(m[0][2], 64)
	y1, _ := strconv.ParseFloat(m[1][2], 64)
	if math.Abs(y0-y1) < 13 {
		t.Errorf("labels at y %v and %v: drawn over each other", y0, y1)
	}
	mark := regexp.MustCompile(`<circle class="episode-mark" cx="[0-9.]+" cy="([0-9.]+)"`).FindStringSubmatch(svg)
	if mark == nil {
		t.Fatalf("no fire mark:\n%s", svg)
	}
	cy, _ := strconv.ParseFloat(mark[1], 64)
	for _, y := range []float64{y0, y1} {
		if y < padTop || y > float64(320-padBottom) {
			t.Errorf("a label at y %v, outside the plot", y)
		}
		if y > cy-6 && y-10 < cy+6 { // a label's text is the 10 px above its baseline
			t.Errorf("a label at y %v over the marks at %v", y, cy)
		}
	}
}
