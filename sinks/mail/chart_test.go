package mail

import (
	"bytes"
	"image"
	"image/png"
	"math"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

var chartEnd = time.Date(2025, 3, 4, 11, 0, 0, 0, time.UTC)

// perMinute returns one point a minute over [from, from+n min), hits(i) each.
func perMinute(from time.Time, n int, hits func(i int) uint64) []traffic.MinuteHits {
	pts := make([]traffic.MinuteHits, n)
	for i := range pts {
		pts[i] = traffic.MinuteHits{Minute: from.Add(time.Duration(i) * time.Minute), Hits: hits(i)}
	}
	return pts
}

func sum(v []uint64) (s uint64) {
	for _, x := range v {
		s += x
	}
	return s
}

func TestChartDownsamplesADay(t *testing.T) {
	from := chartEnd.Add(-24 * time.Hour)
	c := newChart(perMinute(from, 1440, func(int) uint64 { return 1 }), from, chartEnd, chartEnd.Add(-time.Hour))
	if c == nil {
		t.Fatal("no chart")
	}
	if len(c.buckets) > plotW || len(c.buckets) > 600 {
		t.Errorf("%d buckets, want at most %d", len(c.buckets), plotW)
	}
	if c.step != 3*time.Minute || c.stepText() != "3 minutes" || len(c.buckets) != 480 {
		t.Errorf("step %s (%q), %d buckets; want 3m and 480", c.step, c.stepText(), len(c.buckets))
	}
	if got := sum(c.buckets); got != 1440 {
		t.Errorf("buckets hold %d hits, want 1440", got)
	}
	if c.mark != 460 { // 23h in, in 3-minute buckets
		t.Errorf("crossing in bucket %d, want 460", c.mark)
	}
}

func TestChartFillsGapsAndKeepsToTheWindow(t *testing.T) {
	from := chartEnd.Add(-10 * time.Minute)
	pts := []traffic.MinuteHits{
		{Minute: from.Add(5 * time.Minute), Hits: 7},
		{Minute: from, Hits: 3},
		{Minute: from.Add(-time.Minute), Hits: 100},  // before the window
		{Minute: chartEnd, Hits: 100},                // at its end: after it
		{Minute: from.Add(9 * time.Minute), Hits: 0}, // a zero point is fine
	}
	c := newChart(pts, from, chartEnd, chartEnd.Add(time.Hour))
	want := []uint64{3, 0, 0, 0, 0, 7, 0, 0, 0, 0}
	if c == nil || len(c.buckets) != len(want) {
		t.Fatalf("chart %+v, want 10 one-minute buckets", c)
	}
	for i := range want {
		if c.buckets[i] != want[i] {
			t.Fatalf("buckets %v, want %v", c.buckets, want)
		}
	}
	if c.mark != -1 || c.peak != 7 || !c.peakAt.Equal(from.Add(5*time.Minute)) || c.stepText() != "minute" {
		t.Errorf("mark %d peak %d at %v step %q", c.mark, c.peak, c.peakAt, c.stepText())
	}
}

func TestChartEdgeCases(t *testing.T) {
	pts := []traffic.MinuteHits{{Minute: chartEnd, Hits: 1}}
	if c := newChart(nil, chartEnd.Add(-time.Hour), chartEnd, chartEnd); c != nil {
		t.Error("chart without points")
	}
	if c := newChart(pts, chartEnd, chartEnd.Add(-time.Hour), chartEnd); c != nil {
		t.Error("chart of a window that ends before it starts")
	}
	// Missing edges come from the points.
	c := newChart([]traffic.MinuteHits{{Minute: chartEnd.Add(-30 * time.Minute), Hits: 2}, {Minute: chartEnd, Hits: 1}}, time.Time{}, time.Time{}, time.Time{})
	if c == nil || !c.start.Equal(chartEnd.Add(-30*time.Minute)) || !c.end.Equal(chartEnd.Add(time.Minute)) || sum(c.buckets) != 3 {
		t.Errorf("chart from points alone: %+v", c)
	}
	// A window from the epoch is cut to the last 400 days, still within
	// the plot's width.
	c = newChart(pts, time.Unix(0, 0), chartEnd.Add(time.Minute), chartEnd)
	if c == nil || len(c.buckets) > plotW || sum(c.buckets) != 1 || c.end.Sub(c.start) > maxChartSpan {
		t.Errorf("epoch-wide chart: %v buckets of %s", len(c.buckets), c.step)
	}
	if _, err := c.png(); err != nil {
		t.Error(err)
	}
	// Counts near the top of uint64 saturate rather than wrap.
	c = newChart([]traffic.MinuteHits{{Minute: chartEnd, Hits: math.MaxUint64}, {Minute: chartEnd, Hits: 5}}, chartEnd, chartEnd.Add(time.Minute), chartEnd)
	if c.buckets[0] != math.MaxUint64 {
		t.Errorf("saturated bucket = %d", c.buckets[0])
	}
	if _, err := c.png(); err != nil {
		t.Error(err)
	}
}

func TestChartPNG(t *testing.T) {
	from := chartEnd.Add(-10 * time.Minute)
	c := newChart([]traffic.MinuteHits{{Minute: from.Add(2 * time.Minute), Hits: 40}, {Minute: from.Add(7 * time.Minute), Hits: 1}}, from, chartEnd, from.Add(7*time.Minute))
	data, err := c.png()
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if img.Bounds() != image.Rect(0, 0, chartW, chartH) {
		t.Fatalf("bounds %v", img.Bounds())
	}
	bar := chartPalette[colBar]
	base := marginTop + plotH
	column := func(i int) int { return marginLeft + i*plotW/10 + 2 }
	isBar := func(x, y int) bool { return img.At(x, y) == bar }
	if !isBar(column(2), base-1) || !isBar(column(2), marginTop+plotH/5+2) {
		t.Error("no bar for 40 hits (the axis tops out at 50)")
	}
	if !isBar(column(7), base-1) {
		t.Error("a single hit draws no bar")
	}
	for _, i := range []int{0, 1, 3, 9} {
		if isBar(column(i), base-1) {
			t.Errorf("bar drawn for empty bucket %d", i)
		}
	}
	if len(data) > 20<<10 {
		t.Errorf("chart is %d bytes", len(data))
	}
}

func TestChartLabelsHaveGlyphs(t *testing.T) {
	for r, g := range glyphs {
		for _, row := range g {
			if len(row) != glyphW {
				t.Errorf("glyph %q has a row %q", r, row)
			}
		}
	}
	var numbers []string
	for _, v := range []uint64{0, 1, 999, 5000, 9999, 10000, 12345, 250000, 1 << 40, math.MaxUint64} {
		numbers = append(numbers, compactNumber(v), compactNumber(niceCeil(v)))
	}
	for _, l := range numbers {
		if textWidth(l) > marginLeft-4 {
			t.Errorf("value label %q is %d px wide, more than the margin", l, textWidth(l))
		}
	}
	for _, l := range append(numbers, "UTC", "01-02", "23:59") {
		for _, r := range l {
			if _, ok := glyphs[r]; !ok {
				t.Errorf("label %q: no glyph for %q", l, r)
			}
		}
	}
}

func TestNiceCeilAndCompactNumber(t *testing.T) {
	for v, want := range map[uint64]uint64{0: 1, 1: 1, 2: 2, 3: 5, 6: 10, 11: 20, 499: 500, 501: 1000,
		1e19: 1e19, 1e19 + 1: 1e19 + 1, math.MaxUint64: math.MaxUint64} {
		if got := niceCeil(v); got != want {
			t.Errorf("niceCeil(%d) = %d, want %d", v, got, want)
		}
	}
	for v, want := range map[uint64]string{0: "0", 950: "950", 5000: "5,000", 10000: "10k", 12345: "12.3k",
		250000: "250k", 2500000: "2.5M", 1e19: "10E", math.MaxUint64: "18.4E"} {
		if got := compactNumber(v); got != want {
			t.Errorf("compactNumber(%d) = %q, want %q", v, got, want)
		}
	}
}
