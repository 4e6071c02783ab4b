package mail

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"sync"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

// The chart is drawn by hand with image/png: bars, two grid lines and a
// few numeric labels are all it needs, and a charting library (and the
// font rasteriser it brings) would cost more in dependencies and render
// time than the forty lines of drawing below.

// Chart geometry in pixels. 600 px is as wide as most mail clients show
// an image without scaling it down.
const (
	chartW, chartH = 600, 200
	marginLeft     = 40 // y labels: "18.4E" is the widest
	marginRight    = 10
	marginTop      = 8
	marginBottom   = 18 // tick marks and x labels
	plotW          = chartW - marginLeft - marginRight
	plotH          = chartH - marginTop - marginBottom
	// maxChartSpan bounds the window drawn: per-minute counts over more
	// than a year say nothing per minute, so the last 400 days are kept.
	maxChartSpan = 400 * 24 * time.Hour
)

// Palette indexes; a paletted PNG of flat colours is a few KB.
const (
	colBackground = iota
	colGrid
	colText
	colBar
	colMark
)

var chartPalette = color.Palette{
	colBackground: color.RGBA{0xff, 0xff, 0xff, 0xff},
	colGrid:       color.RGBA{0xe5, 0xe7, 0xeb, 0xff},
	colText:       color.RGBA{0x4b, 0x55, 0x63, 0xff},
	colBar:        color.RGBA{0x25, 0x63, 0xeb, 0xff},
	colMark:       color.RGBA{0xdc, 0x26, 0x26, 0xff},
}

// chartEncoder trades a little size for speed (flat colours compress well
// either way) and reuses its compressor across messages, which was most of
// a message's allocations.
var chartEncoder = &png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: new(pngPool)}

// pngPool is a png.EncoderBufferPool on a sync.Pool.
type pngPool struct{ p sync.Pool }

func (p *pngPool) Get() *png.EncoderBuffer {
	b, _ := p.p.Get().(*png.EncoderBuffer)
	return b
}

func (p *pngPool) Put(b *png.EncoderBuffer) { p.p.Put(b) }

// bucketSteps are the bucket widths, in minutes, a chart may use: the
// first that fits the window in plotW buckets is taken, so every bar is at
// least a pixel wide and the caption reads "per 5 minutes", not "per 7".
var bucketSteps = []int64{1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 180, 360, 720, 1440}

// tickSteps are the spacings, in minutes, of the time labels.
var tickSteps = []int64{1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080, 20160, 43200}

// chart is a notification's per-minute series summed into buckets.
type chart struct {
	start, end time.Time     // UTC; start is a whole minute
	step       time.Duration // bucket width, whole minutes
	buckets    []uint64      // zero where no point fell
	mark       int           // bucket of the crossing, -1 if outside
	peakAt     time.Time     // the busiest minute among the points
	peak       uint64
}

// newChart buckets points over [from, to). A zero from or to is taken from
// the points. It returns nil when there is nothing to draw: no points, or
// an empty window.
func newChart(points []traffic.MinuteHits, from, to, crossedAt time.Time) *chart {
	if len(points) == 0 {
		return nil
	}
	if from.IsZero() || to.IsZero() {
		lo, hi := points[0].Minute, points[0].Minute
		for _, p := range points[1:] {
			if p.Minute.Before(lo) {
				lo = p.Minute
			}
			if p.Minute.After(hi) {
				hi = p.Minute
			}
		}
		if from.IsZero() {
			from = lo
		}
		if to.IsZero() {
			to = hi.Truncate(time.Minute).Add(time.Minute)
		}
	}
	start, end := from.UTC().Truncate(time.Minute), to.UTC()
	if end.Sub(start) > maxChartSpan { // Sub saturates, so this also catches year 1
		start = end.Add(-maxChartSpan).Truncate(time.Minute)
	}
	if !end.After(start) {
		return nil
	}
	minutes := int64((end.Sub(start) + time.Minute - 1) / time.Minute)
	per := (minutes + plotW - 1) / plotW
	for _, s := range bucketSteps {
		if s >= per {
			per = s
			break
		}
	}
	c := &chart{start: start, end: end, step: time.Duration(per) * time.Minute, mark: -1}
	c.buckets = make([]uint64, (minutes+per-1)/per)
	for _, p := range points {
		if p.Minute.Before(start) || !p.Minute.Before(end) {
			continue
		}
		i := p.Minute.Sub(start) / c.step
		c.buckets[i] = addSat(c.buckets[i], p.Hits)
		if p.Hits > c.peak {
			c.peak, c.peakAt = p.Hits, p.Minute.UTC().Truncate(time.Minute)
		}
	}
	if !crossedAt.Before(start) && crossedAt.Before(end) {
		c.mark = int(crossedAt.Sub(start) / c.step)
	}
	return c
}

func addSat(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// stepText names the bucket width for captions: "minute", "5 minutes".
func (c *chart) stepText() string {
	switch m := int64(c.step / time.Minute); {
	case m == 1:
		return "minute"
	case m == 60:
		return "hour"
	case m == 1440:
		return "day"
	case m%1440 == 0:
		return fmt.Sprintf("%d days", m/1440)
	case m%60 == 0:
		return fmt.Sprintf("%d hours", m/60)
	default:
		return fmt.Sprintf("%d minutes", m)
	}
}

// png draws the bar chart: one bar per bucket, the value axis labelled at
// its top and middle, UTC times along the bottom, and a dashed red line at
// the minute of the crossing.
func (c *chart) png() ([]byte, error) {
	img := image.NewPaletted(image.Rect(0, 0, chartW, chartH), chartPalette)
	base := marginTop + plotH // the baseline's row, just below the bars

	var most uint64
	for _, v := range c.buckets {
		most = max(most, v)
	}
	top := niceCeil(max(most, 1))
	yOf := func(v uint64) int {
		return base - int(math.Round(float64(v)/float64(top)*plotH))
	}
	gridLine := func(v uint64) {
		y := yOf(v)
		for x := marginLeft; x < marginLeft+plotW; x++ {
			setPixel(img, x, y, colGrid)
		}
		label := compactNumber(v)
		drawText(img, marginLeft-4-textWidth(label), y-glyphH/2, label)
	}
	gridLine(top)
	if top%2 == 0 {
		gridLine(top / 2)
	}

	n := len(c.buckets)
	for i, v := range c.buckets {
		if v == 0 {
			continue
		}
		x0, x1 := marginLeft+i*plotW/n, marginLeft+(i+1)*plotW/n
		if x1-x0 >= 3 {
			x1-- // a gap between wide bars
		}
		y0 := min(yOf(v), base-1) // at least a pixel for any hit
		for y := y0; y < base; y++ {
			for x := x0; x < x1; x++ {
				img.Pix[img.PixOffset(x, y)] = colBar
			}
		}
	}
	if c.mark >= 0 {
		x := marginLeft + (2*c.mark+1)*plotW/(2*n)
		for y := marginTop; y < base; y++ {
			if y/3%2 == 0 {
				setPixel(img, x, y, colMark)
			}
		}
	}

	for x := marginLeft; x < marginLeft+plotW; x++ {
		setPixel(img, x, base, colText)
	}
	drawText(img, marginLeft-4-textWidth("0"), base-glyphH/2, "0")
	c.drawTimeAxis(img, base)

	var buf bytes.Buffer
	if err := chartEncoder.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encode chart: %w", err)
	}
	return buf.Bytes(), nil
}

// drawTimeAxis labels the bottom with UTC times at round intervals, at
// most about seven of them so the labels never touch.
func (c *chart) drawTimeAxis(img *image.Paletted, base int) {
	span := c.end.Sub(c.start)
	every := time.Duration(tickSteps[len(tickSteps)-1]) * time.Minute
	for _, s := range tickSteps {
		if d := time.Duration(s) * time.Minute; span/d <= 7 {
			every = d
			break
		}
	}
	layout := "15:04"
	if every >= 24*time.Hour {
		layout = "01-02"
	}
	y := base + 5
	for t := c.start.Truncate(every); t.Before(c.end); t = t.Add(every) {
		if t.Before(c.start) {
			continue
		}
		x := marginLeft + int(float64(t.Sub(c.start))/float64(span)*plotW)
		for dy := 1; dy <= 3; dy++ {
			setPixel(img, x, base+dy, colText)
		}
		label := t.Format(layout)
		lx := min(max(x-textWidth(label)/2, marginLeft), chartW-1-textWidth(label))
		drawText(img, lx, y+1, label)
	}
	drawText(img, 4, y+1, "UTC")
}

// niceCeil returns the smallest of 1, 2, 5, 10, 20, 50, ... that is at
// least v (v itself past the largest that fits in a uint64).
func niceCeil(v uint64) uint64 {
	for p := uint64(1); ; p *= 10 {
		for _, m := range []uint64{1, 2, 5} {
			if p > math.MaxUint64/m {
				return v
			}
			if m*p >= v {
				return m * p
			}
		}
		if p > math.MaxUint64/10 {
			return v
		}
	}
}

// compactNumber formats an axis label in at most five glyphs where it can:
// 950, 5,000, 25k, 12.5M.
func compactNumber(v uint64) string {
	if v < 10000 {
		return traffic.FormatCount(v)
	}
	units := []struct {
		size   uint64
		suffix string
	}{{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}}
	for _, u := range units {
		if v >= u.size {
			tenths := v / (u.size / 10)
			if whole, frac := tenths/10, tenths%10; frac != 0 && whole < 100 {
				return fmt.Sprintf("%d.%d%s", whole, frac, u.suffix)
			}
			return fmt.Sprintf("%d%s", tenths/10, u.suffix)
		}
	}
	return traffic.FormatCount(v) // unreachable: v >= 10000 has a unit
}
