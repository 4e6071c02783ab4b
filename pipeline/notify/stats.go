package notify

import (
	"context"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// Stats answers what an email shows besides the count: the page's views
// per minute and its top referrers over the rule's window.
type Stats interface {
	PageSeries(ctx context.Context, site, path string, from, to time.Time) ([]traffic.MinuteHits, error)
	TopReferrers(ctx context.Context, site, path string, from, to time.Time, limit int) ([]traffic.Referrer, error)
}

// allTimeChart is the span charted for all-time rules, whose window has
// no start worth drawing.
const allTimeChart = 24 * time.Hour

// maxChart bounds the span charted and searched for referrers: a
// month-long calendar window shows its last week.
const maxChart = 7 * 24 * time.Hour

// describe builds the notification, with the chart and referrers when
// stats are at hand. Without them the mail still goes out: the count is
// what was promised, the context is a courtesy.
func (w *Worker) describe(ctx context.Context, x crossing.Crossing) Notification {
	n := Notification{
		Key: x.Key, Rule: x.Rule, Site: x.Site, Path: x.Path, Count: x.Count, Threshold: x.Threshold,
		Window: x.Window, Event: x.Event, CrossedAt: x.CrossedAt, Recipients: x.Recipients,
		Subject: x.Subject, Body: x.Body, Labels: x.Labels, Why: x.Why,
	}
	if x.Digest != nil {
		// A digest is a list of pages: no one page's chart to draw.
		n.DigestTotal = x.Digest.Total
		for _, it := range x.Digest.Items {
			n.Digest = append(n.Digest, DigestItem{Path: it.Path, Count: it.Count, Threshold: it.Threshold})
		}
		return n
	}
	if w.stats == nil {
		return n
	}
	// The minute of the crossing is included.
	n.WindowEnd = x.CrossedAt.Truncate(time.Minute).Add(time.Minute)
	if !x.WindowTo.IsZero() && x.WindowTo.Before(n.WindowEnd) {
		n.WindowEnd = x.WindowTo // a calendar window judged after it closed
	}
	switch span, err := time.ParseDuration(x.Window); {
	case !x.WindowFrom.IsZero():
		n.WindowStart = x.WindowFrom
	case err == nil && span > 0:
		n.WindowStart = n.WindowEnd.Add(-span)
	default:
		n.WindowStart = n.WindowEnd.Add(-allTimeChart)
	}
	if n.WindowEnd.Sub(n.WindowStart) > maxChart {
		n.WindowStart = n.WindowEnd.Add(-maxChart) // a month of minutes is not a chart
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	series, err := w.stats.PageSeries(ctx, x.Site, x.Path, n.WindowStart, n.WindowEnd)
	if err != nil {
		w.logger.Warn("page series for the email unavailable; sending without the chart", "key", x.Key, "err", err)
	}
	n.Series = series
	refs, err := w.stats.TopReferrers(ctx, x.Site, x.Path, n.WindowStart, n.WindowEnd, 10)
	if err != nil {
		w.logger.Warn("top referrers for the email unavailable; sending without them", "key", x.Key, "err", err)
	}
	n.Referrers = refs
	return n
}
