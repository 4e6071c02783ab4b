// Package demotraffic writes the access logs `make demo` runs on: weeks
// of history for a small site, rotated as logrotate leaves them, then
// live lines at the demo clock's time (internal/democlock), with a story
// the shipped rule file has something to say about:
//
//   - a blog post surges from a Hacker News link at the start of the live
//     phase, then fades: a fire naming the referrer, an escalation, "back
//     to normal";
//   - /docs/install answers 404 since a deploy 3 hours before the live
//     phase: its views went quiet;
//   - /blog/launch-week is published as the live phase starts and takes
//     off;
//   - /pricing is busy enough that the demo's threshold rule (more than
//     100 views in an hour) fires at once, as it always did.
//
// Everything is drawn from seeded generators, one per minute, so a
// minute's lines are the same whichever process writes them and however
// the history is split into files.
package demotraffic

import (
	"time"
)

// Site is the demo's site and what happens to it. End is where the
// history stops and the live phase begins; times are UTC.
type Site struct {
	End  time.Time
	Seed uint64
	// Scale multiplies every rate (1: about 1,800 views an hour on a
	// weekday afternoon, 25k lines a day): lower it for quick tests.
	Scale float64
	// offset is the audience's local time minus UTC: the rhythm follows
	// the audience's day, placed so that End is mid-afternoon for them,
	// a busy hour whatever time the demo runs (see New).
	offset time.Duration
	// holiday is the local day (its midnight, local as UTC) of the
	// public holiday: traffic at 30 %.
	holiday time.Time
	pages   []page
}

// The story's pages.
const (
	SurgePath = "/blog/sqlite-at-scale"
	QuietPath = "/docs/install"
	NewPath   = "/blog/launch-week"
	Host      = "demo.example"
)

// The story's times, from End.
const (
	quietSince = -3 * time.Hour   // the deploy that broke /docs/install
	surgeFrom  = 0                // the Hacker News link, on its new page
	surgeRamp  = 3 * time.Minute  // rising to a first level
	surgeFirst = 10 * time.Minute // at it, then on the front page
	surgeClimb = 3 * time.Minute  // rising to its peak
	surgePeak  = 10 * time.Minute // at its peak, then fading
	surgeFade  = 10 * time.Minute // back to its usual trickle
)

// page is one page: its views an hour on a weekday afternoon, its size,
// and where its visitors come from besides the site's usual mix.
type page struct {
	path  string
	rate  float64 // views an hour at the weekday peak
	bytes int
	blog  bool // shared on social sites more than others
}

// pages: about 40, from the home page down to pages seen a few times a
// day (a real site's long tail, gathered into a few).
var pages = []page{
	{"/", 300, 10422, false},
	{"/pricing", 220, 18230, false},
	{"/login", 120, 5210, false},
	{QuietPath, 120, 22310, false},
	{"/features", 90, 21877, false},
	{"/docs", 80, 14020, false},
	{"/docs/getting-started", 70, 31877, false},
	{"/signup", 60, 6120, false},
	{"/docs/api", 50, 48211, false},
	{"/blog", 40, 19833, false},
	{"/docs/config", 30, 27104, false},
	{"/blog/postgres-vs-clickhouse", 30, 25110, true},
	{"/docs/webhooks", 25, 17450, false},
	{"/changelog", 25, 33018, false},
	{"/docs/faq", 20, 15992, false},
	{"/integrations", 20, 12880, false},
	{SurgePath, 18, 28740, true},
	{"/compare/alternatives", 18, 20114, false},
	{"/docs/sdk/js", 16, 19002, false},
	{"/about", 15, 7311, false},
	{"/customers", 15, 16420, false},
	{"/status", 15, 4120, false},
	{"/blog/why-we-rewrote-the-tailer", 15, 24380, true},
	{"/blog/on-call-without-tears", 14, 21190, true},
	{"/docs/sdk/python", 14, 18770, false},
	{"/blog/pricing-changes-2026", 12, 14410, true},
	{"/careers", 12, 9220, false},
	{"/integrations/slack", 12, 11003, false},
	{"/blog/year-in-review", 10, 30170, true},
	{"/contact", 10, 6480, false},
	{"/docs/sdk/go", 10, 18120, false},
	{"/integrations/github", 10, 10650, false},
	{"/blog/a-minute-of-logs", 8, 17700, true},
	{"/security", 8, 13300, false},
	{"/events", 6, 8840, false},
	{"/customers/acme", 5, 12220, false},
	{"/legal/privacy", 5, 26050, false},
	{"/legal/terms", 4, 29900, false},
	{"/partners", 4, 7010, false},
	{NewPath, 0, 26400, true}, // published at End
}

// New is the site with its history ending at end.
func New(end time.Time, seed uint64, scale float64) *Site {
	end = end.UTC().Truncate(time.Second)
	if scale <= 0 {
		scale = 1
	}
	s := &Site{End: end, Seed: seed, Scale: scale, pages: pages}
	// End at about 14:30 for the audience: their clock is UTC plus whole
	// hours (a time zone's worth), so the rhythm keeps its shape.
	h := (14 - end.Hour() + 24) % 24
	if h > 12 {
		h -= 24
	}
	s.offset = time.Duration(h) * time.Hour
	// The holiday: a weekday about 2½ weeks back, far enough that the
	// normal of the live phase's weekday has three ordinary weeks beside it.
	day := s.local(end).Truncate(24*time.Hour).AddDate(0, 0, -17)
	for day.Weekday() == time.Saturday || day.Weekday() == time.Sunday {
		day = day.AddDate(0, 0, -1)
	}
	s.holiday = day
	return s
}

// local is t on the audience's clock, as a UTC time.
func (s *Site) local(t time.Time) time.Time { return t.UTC().Add(s.offset) }

// hourly is the share of the peak at each local hour: nights at a tenth,
// mornings rising, afternoons at the top, evenings fading.
var hourly = [24]float64{0.22, 0.15, 0.12, 0.10, 0.10, 0.13, 0.25, 0.45, 0.70, 0.90, 1.00, 1.00,
	0.95, 1.00, 1.00, 0.95, 0.90, 0.80, 0.70, 0.65, 0.60, 0.50, 0.40, 0.30}

// weekly is each local weekday's share, Sunday first: a business tool,
// quieter at weekends but read then too.
var weekly = [7]float64{0.65, 1.00, 1.05, 1.00, 0.95, 0.85, 0.60}

// level is the site's traffic at t as a share of a weekday afternoon:
// the hourly rhythm (interpolated within the hour, so hours do not
// step), the weekday, the holiday, and growth of 2 % a week.
func (s *Site) level(t time.Time) float64 {
	l := s.local(t)
	h, frac := l.Hour(), float64(l.Minute())/60
	v := hourly[h]*(1-frac) + hourly[(h+1)%24]*frac
	v *= weekly[l.Weekday()]
	if l.Truncate(24 * time.Hour).Equal(s.holiday) {
		v *= 0.3
	}
	weeksBack := s.End.Sub(t).Hours() / (24 * 7)
	return v * (1 - 0.02*weeksBack)
}

// rate is a page's views a minute at t, the story included.
func (s *Site) rate(p *page, t time.Time) float64 {
	since := t.Sub(s.End)
	base := p.rate * s.level(t) / 60
	switch p.path {
	case QuietPath:
		if since >= quietSince {
			return 0 // answered 404: see notFound
		}
	case SurgePath:
		return base + surge(since)
	case NewPath:
		if since < 0 {
			return 0
		}
		// Read by the site's regulars first, then shared: from 0.3 a
		// minute to 3 over the first 40 minutes.
		return min(3, 0.3+float64(since)/float64(40*time.Minute)*2.7) * s.level(t) / s.level(s.End)
	case "/changelog":
		// The weekly newsletter goes out Tuesday 09:00 local: a morning's
		// burst every week, the page's normal.
		if l := s.local(t); l.Weekday() == time.Tuesday && l.Hour() >= 9 && l.Hour() < 11 {
			base += 1.5
		}
	}
	return base
}

// notFound is the rate of 404s for a page: /docs/install's readers still
// follow the links to it after the deploy that broke it.
func (s *Site) notFound(p *page, t time.Time) float64 {
	if p.path == QuietPath && t.Sub(s.End) >= quietSince {
		return p.rate * s.level(t) / 60
	}
	return 0
}

// surge is the Hacker News visitors a minute to SurgePath, since from
// End: rising for surgeRamp to 10 a minute while the link is new, then,
// on the front page, to 50 a minute, held, then fading. The rule fires
// on the first level's minutes (its bar 44 to 78 views measured) and
// escalates when the count rises to 4 times the count it fired at, which
// only the front page brings: a surge held at one rate is not told
// rising as its hour fills.
func surge(since time.Duration) float64 {
	const first, top = 10.0, 50.0
	d := since - surgeFrom
	ramp := func(from, to float64, d, over time.Duration) float64 {
		return from + (to-from)*float64(d+time.Minute)/float64(over+time.Minute)
	}
	switch {
	case d < 0:
		return 0
	case d < surgeRamp:
		return ramp(0, first, d, surgeRamp)
	case d < surgeRamp+surgeFirst:
		return first
	case d < surgeRamp+surgeFirst+surgeClimb:
		return ramp(first, top, d-surgeRamp-surgeFirst, surgeClimb)
	case d < surgeRamp+surgeFirst+surgeClimb+surgePeak:
		return top
	case d < surgeRamp+surgeFirst+surgeClimb+surgePeak+surgeFade:
		return top * (1 - float64(d-surgeRamp-surgeFirst-surgeClimb-surgePeak)/float64(surgeFade))
	}
	return 0
}
