package report

import (
	"fmt"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

// Subject is the report's one-line title.
func (r Report) Subject() string {
	return fmt.Sprintf("[pagewatch] %s report for %s: %s", periodWord(r.Period), r.Site, r.SpanText())
}

func periodWord(p string) string {
	switch p {
	case PeriodWeek:
		return "Weekly"
	case PeriodMonth:
		return "Monthly"
	}
	return "Daily"
}

// SpanText names Cur in the report's zone: "2026-11-23", "2026-11-16 – 2026-11-22", "2026-10".
func (r Report) SpanText() string {
	loc, err := time.LoadLocation(r.Zone)
	if err != nil {
		loc = time.UTC
	}
	from, last := r.Cur.From.In(loc), r.Cur.To.In(loc).Add(-time.Nanosecond)
	switch r.Period {
	case PeriodMonth:
		return from.Format("2006-01")
	case PeriodWeek:
		return from.Format(time.DateOnly) + " – " + last.Format(time.DateOnly)
	}
	return from.Format(time.DateOnly)
}

// Lines is the report as plain text lines, for receivers that take text
// (chats, webhooks); paths are as recorded, for the sink to clean.
func (r Report) Lines() []string {
	out := []string{fmt.Sprintf("%s views on %s (%s): %s on the %s before (%s).",
		traffic.FormatCount(r.Total), r.Site, r.SpanText(), Change(r.Total, r.PrevTotal), r.Period, traffic.FormatCount(r.PrevTotal))}
	list := func(title string, pages []Page, line func(Page) string) {
		if len(pages) == 0 {
			return
		}
		out = append(out, "", title+":")
		for _, p := range pages {
			out = append(out, "  "+line(p))
		}
	}
	list(fmt.Sprintf("Top %d", r.Top), r.Pages, func(p Page) string {
		return fmt.Sprintf("%d. %s  %s views (%s)", p.Rank, p.Path, traffic.FormatCount(p.Views), Change(p.Views, p.PrevViews))
	})
	list("Up the most", r.Risers, func(p Page) string {
		return fmt.Sprintf("%s  %s views (+%s)", p.Path, traffic.FormatCount(p.Views), traffic.FormatCount(uint64(p.Delta())))
	})
	list("Down the most", r.Fallers, func(p Page) string {
		return fmt.Sprintf("%s  %s views (-%s)", p.Path, traffic.FormatCount(p.Views), traffic.FormatCount(uint64(-p.Delta())))
	})
	list(fmt.Sprintf("New in the top %d", r.Top), r.New, func(p Page) string {
		return fmt.Sprintf("%s  #%d", p.Path, p.Rank)
	})
	if len(r.Milestones) > 0 {
		out = append(out, "", "Milestones:")
		for _, m := range r.Milestones {
			out = append(out, fmt.Sprintf("  %s passed %s views (%s all time)", m.Path, traffic.FormatCount(m.Milestone), traffic.FormatCount(m.Total)))
		}
	}
	return out
}

// Change is now against before: "+12%", "-3%", "new", "same".
func Change(now, before uint64) string {
	switch {
	case before == 0 && now == 0:
		return "same"
	case before == 0:
		return "new"
	case now == before:
		return "same"
	}
	pct := (float64(now) - float64(before)) / float64(before) * 100
	return fmt.Sprintf("%+.0f%%", pct)
}
