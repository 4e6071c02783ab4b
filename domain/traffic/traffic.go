// Package traffic holds what is known of a page's views: its counts over
// windows, its views per minute and its referrers, and the questions the
// stages ask of the store about them. The stages declare the interfaces
// they need in these terms (pipeline/sweep's Counter, pipeline/notify's
// Stats); sinks/clickhouse answers them.
package traffic

import "time"

// Measure is what a count counts: views (page views, the hits of the
// classes counted) or visitors (distinct client keys among those hits,
// schema/migrations/0005).
type Measure uint8

// The measures. The zero value is Views, what every count was before
// visitors.
const (
	Views Measure = iota
	Visitors
)

// String is the measure's name, as rules spell it (count: visitors).
func (m Measure) String() string {
	if m == Visitors {
		return "visitors"
	}
	return "views"
}

// WindowQuery asks for the hits of every page in several windows at once,
// all ending at End: what one sweep needs for all its rules.
type WindowQuery struct {
	// Measure is what the counts count. Visitors are distinct over each
	// whole window, read from page_clients (never sealed, kept as long
	// as raw hits): SealedBefore does not apply to them.
	Measure Measure
	// Sites limits the pages to these sites; empty means every site.
	Sites []string
	// Starts are the windows' starts; the zero time means all time. A
	// start at or after End counts nothing.
	Starts []time.Time
	// End: minutes starting before End count.
	End time.Time
	// SealedBefore: the UTC days before its day are read from page_days,
	// the rest from page_minutes; the zero time reads page_minutes only.
	// Pass the time of the last SealDays that succeeded: page_days is
	// trusted for those days, sealed or not, and hits loaded for one of
	// them since that SealDays count from the next one on.
	SealedBefore time.Time
	// Floor leaves out pages none of whose counts exceeds it.
	Floor uint64
	// Once marks a query asked once a day (pages' trends): its sealed
	// days are not kept for the next sweep, where they would push out
	// the sweep's own and hold every page's counts for a day.
	Once bool
}

// PageCount is one page's counts, one per WindowQuery.Starts, in order.
type PageCount struct {
	Site, Path string
	Counts     []uint64
}

// MinuteScan selects the per-minute counts ScanMinutes streams.
type MinuteScan struct {
	Sites    []string  // empty: every site
	From, To time.Time // minutes starting in [From, To)
}

// SiteHour is how many minutes of one UTC hour had hits on a site: how
// often its data flows at that hour, which says how long a silence it
// can have before its data is late.
type SiteHour struct {
	Site    string
	Hour    time.Time
	Minutes int
	Hits    uint64 // its views (for the clocks its readers keep)
}

// MinuteHits is one page's hit count in one minute.
type MinuteHits struct {
	Minute time.Time // start of the minute
	Hits   uint64
}

// Referrer is one referer of a page and how many of its hits came from it.
type Referrer struct {
	Referer string // as logged: written by strangers, may contain anything
	Hits    uint64
}

// HourQuery asks for some pages' hits per whole UTC hour over some spans,
// for the baselines of spike and new_page rules: the pages of Sites whose
// path is one of Paths (callers drop the combinations they did not ask
// for), in the hours starting in any of Spans.
type HourQuery struct {
	Sites, Paths []string
	// AllPaths reads every page of Sites, Paths ignored: for a normal of
	// most of a site's pages, one scan of its hours beats naming them.
	AllPaths bool
	Spans    []Span
	// SealedBefore: the hours of the UTC days before its day are read
	// from page_hours, the rest from page_minutes; the zero time reads
	// page_minutes only. Pass the time of the last SealHours that
	// succeeded, as WindowQuery.SealedBefore is SealDays'.
	SealedBefore time.Time
}

// SpanQuery asks for some pages' visitors in each of some spans: the
// baselines of rules counting visitors, which cannot be summed from
// hours (a person seen in two hours is one visitor of both).
type SpanQuery struct {
	Sites, Paths []string
	AllPaths     bool // as HourQuery's
	Spans        []Span
}

// Span is [From, To) in whole hours.
type Span struct{ From, To time.Time }

// NoiseQuery asks for each page's own noise (rules.PageNoise) over whole
// weeks of its sealed hours, computed where the hours are: each
// hour-of-week's overdispersion from its Weeks samples, over those whose
// median is at least MinMedian, their mean with TrimPercent left out at
// each end. Pages with fewer than MinHours such hours are left out.
type NoiseQuery struct {
	Sites []string
	// From is the first hour: Weeks weeks of hours from it, every one
	// in page_hours (sealed).
	From  time.Time
	Weeks int
	// Every: only every Every-th hour from From is read (168 a
	// multiple of it).
	Every int
	// MinMedian, MinHours and TrimPercent are rules.PageNoise's; Bias is
	// what (1.4826 × MAD)² of Weeks samples is multiplied by to read as
	// their variance (rules.NoiseBias).
	MinMedian   float64
	MinHours    int
	TrimPercent int
	Bias        float64
}

// PageNoise is one page's noise (NoiseQuery): its overdispersion φ.
type PageNoise struct {
	Site, Path string
	Noise      float64
}
