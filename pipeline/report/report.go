// Package report is the scheduled reports stage: per site, on a cron
// schedule, the last day, week or month against the one before (top
// pages, top movers up and down, pages new in the top N, milestones
// reached), sent to receivers once per period however many workers run.
package report

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

// Report is one report, built.
type Report struct {
	// Key is unique per report and period: "report.<name>.<from unix>".
	Key    string
	Name   string
	Site   string // from the config
	Period string // day, week, month
	Zone   string
	Cur    Span // the period reported on
	Prev   Span // the one before, compared against
	Top    int  // N

	Total, PrevTotal uint64
	// Pages are the N with the most views in Cur (ties by path).
	Pages []Page
	// Risers and Fallers are the N that gained and lost the most views
	// against Prev (ties by path).
	Risers, Fallers []Page
	// New are the Pages that were not among Prev's N.
	New []Page
	// Milestones are the pages whose all-time views reached a milestone
	// during Cur, the highest milestone first.
	Milestones []Milestone
	// Buckets are the site's views per hour (day) or per day (week,
	// month) across Cur, for the chart.
	Buckets []Bucket
}

// Page is one page's views in the two periods. Paths are written by
// strangers: they may contain anything.
type Page struct {
	Path             string
	Views, PrevViews uint64
	// Rank and PrevRank are 1-based places by views in Cur and Prev; 0:
	// no views in that period.
	Rank, PrevRank int
}

// Delta is Views - PrevViews.
func (p Page) Delta() int64 { return int64(p.Views) - int64(p.PrevViews) }

// Milestone is a page reaching an all-time count.
type Milestone struct {
	Path      string
	Milestone uint64
	Total     uint64 // all-time views at the end of Cur
}

// Bucket is the site's views from At to the next bucket.
type Bucket struct {
	At    time.Time
	Views uint64
}

// Key is a report's key for the period starting at from.
func Key(name string, from time.Time) string { return fmt.Sprintf("report.%s.%d", name, from.Unix()) }

// build makes the report from the counts read for it: periods, whose
// Counts are [Prev.From, Cur.From, buckets[1:]...] to Cur.To, and
// alltime, whose Counts are [all time, Cur.From] to Cur.To.
func build(s Spec, cur, prev Span, bucketStarts []time.Time, periods, alltime []traffic.PageCount) Report {
	r := Report{Key: Key(s.Name, cur.From), Name: s.Name, Site: s.Site, Period: s.Period, Zone: s.Zone, Cur: cur, Prev: prev, Top: s.Top}
	var pages []Page
	r.Buckets = make([]Bucket, len(bucketStarts))
	for i, at := range bucketStarts {
		r.Buckets[i].At = at
	}
	for _, pc := range periods {
		c := pc.Counts
		if len(c) < 1+len(bucketStarts) {
			continue
		}
		views := c[1]
		p := Page{Path: pc.Path, Views: views, PrevViews: c[0] - views}
		r.Total += p.Views
		r.PrevTotal += p.PrevViews
		for i := range bucketStarts {
			next := uint64(0)
			if i+2 < len(c) {
				next = c[i+2]
			}
			r.Buckets[i].Views += c[i+1] - next
		}
		if p.Views > 0 || p.PrevViews > 0 {
			pages = append(pages, p)
		}
	}
	// Ranks in each period.
	rank := func(views func(Page) uint64, set func(*Page, int)) {
		slices.SortFunc(pages, func(a, b Page) int {
			return cmp.Or(cmp.Compare(views(b), views(a)), cmp.Compare(a.Path, b.Path))
		})
		for i := range pages {
			if views(pages[i]) > 0 {
				set(&pages[i], i+1)
			}
		}
	}
	rank(func(p Page) uint64 { return p.PrevViews }, func(p *Page, n int) { p.PrevRank = n })
	rank(func(p Page) uint64 { return p.Views }, func(p *Page, n int) { p.Rank = n })
	for _, p := range pages[:min(len(pages), s.Top)] {
		if p.Views == 0 {
			break
		}
		r.Pages = append(r.Pages, p)
		if p.PrevRank == 0 || p.PrevRank > s.Top {
			r.New = append(r.New, p)
		}
	}
	byDelta := slices.Clone(pages)
	slices.SortFunc(byDelta, func(a, b Page) int { return cmp.Or(cmp.Compare(b.Delta(), a.Delta()), cmp.Compare(a.Path, b.Path)) })
	for _, p := range byDelta {
		if p.Delta() <= 0 || len(r.Risers) == s.Top {
			break
		}
		r.Risers = append(r.Risers, p)
	}
	slices.SortFunc(byDelta, func(a, b Page) int { return cmp.Or(cmp.Compare(a.Delta(), b.Delta()), cmp.Compare(a.Path, b.Path)) })
	for _, p := range byDelta {
		if p.Delta() >= 0 || len(r.Fallers) == s.Top {
			break
		}
		r.Fallers = append(r.Fallers, p)
	}
	for _, pc := range alltime {
		if len(pc.Counts) < 2 {
			continue
		}
		total, before := pc.Counts[0], pc.Counts[0]-pc.Counts[1]
		var best uint64
		for _, m := range s.Milestones {
			if before < m && m <= total {
				best = max(best, m)
			}
		}
		if best > 0 {
			r.Milestones = append(r.Milestones, Milestone{Path: pc.Path, Milestone: best, Total: total})
		}
	}
	slices.SortFunc(r.Milestones, func(a, b Milestone) int {
		return cmp.Or(cmp.Compare(b.Milestone, a.Milestone), cmp.Compare(a.Path, b.Path))
	})
	if len(r.Milestones) > 100 {
		r.Milestones = r.Milestones[:100]
	}
	return r
}
