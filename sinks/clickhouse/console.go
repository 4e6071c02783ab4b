package clickhouse

import (
	"context"
	"fmt"
	"strings"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/pagewatch/pagewatch/console/records"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// The console's port (console.Store): History's reads of the history,
// Traffic's of the counts.

// maxConsoleRows bounds what one console read returns.
const maxConsoleRows = 10_000

// Crossings returns the history's crossings matching q, newest first.
func (hs History) Crossings(ctx context.Context, q records.HistoryQuery) ([]records.CrossingRow, error) {
	limit := min(max(q.Limit, 1), maxConsoleRows)
	rows, err := hs.c.conn.Query(ctx, queryConsoleCrossings, q.From.Unix(), q.To.Unix(),
		q.Site, q.Site, q.Rule, q.Rule, q.Path, q.Path, q.Outcome, q.Outcome, q.From.Unix(),
		max(q.Offset, 0), limit)
	if err != nil {
		return nil, fmt.Errorf("history crossings: %w", err)
	}
	defer rows.Close()
	var out []records.CrossingRow
	for rows.Next() {
		var x records.CrossingRow
		if err := rows.Scan(&x.Key, &x.Rule, &x.Site, &x.Path, &x.Window, &x.Threshold, &x.Count, &x.CrossedAt); err != nil {
			return nil, fmt.Errorf("history crossings: %w", err)
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history crossings: %w", err)
	}
	return out, nil
}

func keySet(keys []string) ch.GroupSet {
	v := make([]any, len(keys))
	for i, k := range keys {
		v[i] = k
	}
	if len(v) == 0 {
		v = []any{""}
	}
	return ch.GroupSet{Value: v}
}

// Outcomes returns what was done with the given crossings, oldest first.
func (hs History) Outcomes(ctx context.Context, keys []string) ([]records.OutcomeRow, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	rows, err := hs.c.conn.Query(ctx, queryConsoleOutcomes, keySet(keys))
	if err != nil {
		return nil, fmt.Errorf("notification outcomes of %d crossings: %w", len(keys), err)
	}
	defer rows.Close()
	var out []records.OutcomeRow
	for rows.Next() {
		var o records.OutcomeRow
		if err := rows.Scan(&o.Key, &o.At, &o.Outcome, &o.SMTPCode, &o.Error, &o.Worker); err != nil {
			return nil, fmt.Errorf("notification outcomes: %w", err)
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// Outcomes of operators' actions in the notifications history, and the
// prefix of their worker column.
const (
	outcomeRetried   = "retried"
	outcomeDiscarded = "discarded"
	consoleWorker    = "console:"
)

// RecordAction keeps an operator's action on a dead letter in the
// notifications history, as an outcome of the crossing it was about
// (retried, discarded), so the crossing's row shows it beside the
// dead_lettered it follows. A hits batch has no crossing: its key is
// "hits#<seq>".
func (hs History) RecordAction(ctx context.Context, a records.Action) error {
	outcome := outcomeRetried
	if a.Action == "discard" {
		outcome = outcomeDiscarded
	}
	key := a.Key
	if key == "" {
		key = fmt.Sprintf("%s#%d", a.Kind, a.Seq)
	}
	text := fmt.Sprintf("dead letter %d (%s", a.Seq, a.Kind)
	if a.Receiver != "" {
		text += ", receiver " + a.Receiver
	}
	text += "): " + a.Reason
	return hs.RecordNotification(ctx, crossing.Record{At: a.At, Outcome: crossing.Outcome(outcome), Error: text,
		Worker: consoleWorker + a.User, Crossing: crossing.Crossing{Key: key, Rule: a.Rule, Site: a.Site, Path: a.Path}})
}

// parseActionText reads back what RecordAction wrote in the error
// column, "dead letter 7 (jobs, receiver email): why", as the receiver
// ("email") and the reason ("why"); text of another shape is all reason.
func parseActionText(text string) (receiver, reason string) {
	rest, ok := strings.CutPrefix(text, "dead letter ")
	if !ok {
		return "", text
	}
	_, rest, ok = strings.Cut(rest, " (")
	if !ok {
		return "", text
	}
	inner, why, ok := strings.Cut(rest, "): ")
	if !ok {
		return "", text
	}
	_, receiver, _ = strings.Cut(inner, ", receiver ")
	return receiver, why
}

// Actions returns the operators' latest actions, newest first, each
// with the receiver its dead letter was for (jobs) and the reason.
func (hs History) Actions(ctx context.Context, since time.Time, limit int) ([]records.Action, error) {
	rows, err := hs.c.conn.Query(ctx, queryConsoleActions, since.Unix(), min(max(limit, 1), maxConsoleRows))
	if err != nil {
		return nil, fmt.Errorf("console actions: %w", err)
	}
	defer rows.Close()
	var out []records.Action
	for rows.Next() {
		var (
			a               records.Action
			outcome, worker string
		)
		if err := rows.Scan(&a.At, &a.Key, &a.Rule, &a.Site, &a.Path, &outcome, &a.Reason, &worker); err != nil {
			return nil, fmt.Errorf("console actions: %w", err)
		}
		a.Action = "retry"
		if outcome == outcomeDiscarded {
			a.Action = "discard"
		}
		a.User = strings.TrimPrefix(worker, consoleWorker)
		a.Receiver, a.Reason = parseActionText(a.Reason)
		if kind, seq, ok := strings.Cut(a.Key, "#"); ok {
			a.Kind, a.Key = kind, ""
			_, _ = fmt.Sscan(seq, &a.Seq) // a key with no number after # leaves Seq 0
		} else {
			a.Kind = "jobs"
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// LastFired returns, per rule and page, the last crossing since a time.
func (hs History) LastFired(ctx context.Context, rules []string, since time.Time) ([]records.CrossingRow, error) {
	if len(rules) == 0 {
		return nil, nil
	}
	rows, err := hs.c.conn.Query(ctx, queryConsoleLastFired, keySet(rules), since.Unix())
	if err != nil {
		return nil, fmt.Errorf("rules last fired: %w", err)
	}
	defer rows.Close()
	var out []records.CrossingRow
	for rows.Next() {
		var x records.CrossingRow
		if err := rows.Scan(&x.Rule, &x.Site, &x.Path, &x.CrossedAt); err != nil {
			return nil, fmt.Errorf("rules last fired: %w", err)
		}
		out = append(out, x)
	}
	return out, rows.Err()
}

// defaultMaxLivePages bounds the live view's pages over all sites: when
// sites come from Host headers a client can make up any number of them,
// and PerSite alone would then not bound the answer.
const defaultMaxLivePages = 2000

// Live returns the last hour's busiest pages, at most q.PerSite a site
// and the Client's maxLivePages in all, with their visitors.
func (t Traffic) Live(ctx context.Context, q records.LiveQuery) ([]records.LivePage, error) {
	end := q.Now.Truncate(time.Minute).Add(time.Minute)
	start, five := end.Add(-time.Hour), end.Add(-5*time.Minute)
	out, err := t.livePages(ctx, q, five, start, end)
	if err != nil {
		return nil, err
	}
	if err := t.liveVisitors(ctx, out, five, start, end); err != nil {
		return nil, err
	}
	return out, nil
}

// livePages are Live's pages and views, from the raw hits.
func (t Traffic) livePages(ctx context.Context, q records.LiveQuery, five, start, end time.Time) ([]records.LivePage, error) {
	rows, err := t.c.conn.Query(ctx, queryConsoleLive, five.Unix(), start.Unix(), end.Unix(),
		q.Site == "", q.Site, min(max(q.PerSite, 1), 1000), t.c.maxLivePages)
	if err != nil {
		return nil, fmt.Errorf("live pages: %w", err)
	}
	defer rows.Close()
	var out []records.LivePage
	for rows.Next() {
		var (
			p  records.LivePage
			ms []uint32
			ns []uint64
		)
		if err := rows.Scan(&p.Site, &p.Path, &p.Views5m, &p.Views1h, &ms, &ns); err != nil {
			return nil, fmt.Errorf("live pages: %w", err)
		}
		p.Minutes = make([]uint64, 60)
		for i, m := range ms {
			if k := (int64(m) - start.Unix()) / 60; k >= 0 && k < 60 && i < len(ns) {
				p.Minutes[k] += ns[i]
			}
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// DayTotals returns the sealed daily views of the given sites' and
// paths' pages on the UTC days in [from, to).
func (t Traffic) DayTotals(ctx context.Context, sites, paths []string, from, to time.Time) ([]records.DayTotal, error) {
	if len(sites) == 0 || len(paths) == 0 {
		return nil, nil
	}
	rows, err := t.c.conn.Query(ctx, queryConsoleDayTotals, keySet(sites), keySet(paths), from.Unix(), to.Unix())
	if err != nil {
		return nil, fmt.Errorf("day totals of %d pages: %w", len(paths), err)
	}
	defer rows.Close()
	var out []records.DayTotal
	for rows.Next() {
		var h records.DayTotal
		if err := rows.Scan(&h.Site, &h.Path, &h.Day, &h.Hits); err != nil {
			return nil, fmt.Errorf("day totals: %w", err)
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// SiteStart returns the site's first minute with hits (zero: none).
func (t Traffic) SiteStart(ctx context.Context, site string) (time.Time, error) {
	var first time.Time
	if err := t.c.conn.QueryRow(ctx, queryConsoleSiteStart, site).Scan(&first); err != nil {
		return time.Time{}, fmt.Errorf("first minute of %s: %w", site, err)
	}
	if first.Unix() <= 0 {
		return time.Time{}, nil
	}
	return first.UTC(), nil
}

// PageHourSeries returns a page's views per hour in [from, to).
func (t Traffic) PageHourSeries(ctx context.Context, site, path string, from, to time.Time) ([]traffic.MinuteHits, error) {
	rows, err := t.c.conn.Query(ctx, queryConsolePageHours, site, path, from.Unix(), to.Unix())
	if err != nil {
		return nil, fmt.Errorf("hourly views of %s%s: %w", site, path, err)
	}
	defer rows.Close()
	var out []traffic.MinuteHits
	for rows.Next() {
		var m traffic.MinuteHits
		if err := rows.Scan(&m.Minute, &m.Hits); err != nil {
			return nil, fmt.Errorf("hourly views of %s%s: %w", site, path, err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// PageCounts returns the given pages' views in [from, to): over more
// than a day, its whole sealed days from page_days (a week of a page's
// minutes is ten thousand rows, its days seven) and the rest from
// page_minutes, exact either way.
func (t Traffic) PageCounts(ctx context.Context, sites, paths []string, from, to time.Time) ([]records.PageViews, error) {
	if len(sites) == 0 || len(paths) == 0 {
		return nil, nil
	}
	query, args := queryConsolePageCounts, []any{keySet(sites), keySet(paths), from.Unix(), to.Unix()}
	if to.Sub(from) > 24*time.Hour {
		sealed, err := t.c.Counts().SealedBefore(ctx, to)
		if err != nil {
			return nil, err
		}
		daysFrom, daysTo := ceilDay(from.Unix()), sealed.Unix()
		if daysFrom < daysTo {
			query = queryConsolePageCountsSealed
			args = []any{keySet(sites), keySet(paths), from.Unix(), daysFrom, daysTo, to.Unix(), keySet(sites), keySet(paths), daysFrom, daysTo}
		}
	}
	out, err := t.pageViews(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("counts of %d pages: %w", len(paths), err)
	}
	return out, nil
}

// TopPages returns a site's busiest pages in [from, to): from the raw
// hits for a span of up to a day, else over the whole sealed days in it.
func (t Traffic) TopPages(ctx context.Context, site string, from, to time.Time, limit int) ([]records.PageViews, error) {
	query, a, b := queryConsoleTopPagesRecent, from.Unix(), to.Unix()
	if to.Sub(from) > 24*time.Hour {
		query = queryConsoleTopPagesDays
	}
	out, err := t.pageViews(ctx, query, a, b, site == "", site, min(max(limit, 1), maxConsoleRows))
	if err != nil {
		return nil, fmt.Errorf("top pages of %q: %w", site, err)
	}
	return out, nil
}

// pageViews runs a query whose rows are (site, path, views).
func (t Traffic) pageViews(ctx context.Context, query string, args ...any) ([]records.PageViews, error) {
	rows, err := t.c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []records.PageViews
	for rows.Next() {
		var p records.PageViews
		if err := rows.Scan(&p.Site, &p.Path, &p.Views); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// Freshness says how far the counts reach.
func (t Traffic) Freshness(ctx context.Context) (records.Freshness, error) {
	var (
		f          records.Freshness
		day, hours time.Time
	)
	since := time.Now().Add(-48 * time.Hour).Unix()
	if err := t.c.conn.QueryRow(ctx, queryConsoleFreshness, since).Scan(&f.LastHit, &day, &hours); err != nil {
		return f, fmt.Errorf("freshness: %w", err)
	}
	if f.LastHit.Unix() > 0 {
		f.LastMinute = f.LastHit.Truncate(time.Minute)
	} else {
		f.LastHit = time.Time{}
	}
	if day.Unix() > 0 {
		f.SealedDay = day
	}
	if hours.Unix() > 0 {
		f.SealedHours = hours
	}
	return f, nil
}

// SiteHours is Counts.SiteHours, for the console's normals of rules that
// learn each site's clocks.
func (t Traffic) SiteHours(ctx context.Context, from, to time.Time) ([]traffic.SiteHour, error) {
	return Counts(t).SiteHours(ctx, from, to)
}
