package clickhouse

import (
	"context"
	"fmt"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// Explain answers what a crossing's why needs beyond the sweep's counts
// (pipeline/sweep's Explainer). Each part is one bounded query: the rank
// scans the site's minutes over the window, the busiest minute, the
// referrer domains and the clients one page's rows. A part that fails fails the whole,
// which the sweep then sends without it.
func (t Traffic) Explain(ctx context.Context, q traffic.ExplainQuery) (traffic.Explanation, error) {
	var e traffic.Explanation
	from, to := q.From.Unix(), q.To.Unix()
	if !q.To.After(q.From) {
		return e, nil
	}
	page := q.Site + q.Path
	if q.Clients {
		c, err := t.clients(ctx, q.Site, q.Path, from, to)
		if err != nil {
			return e, err
		}
		e.Clients = c
	}
	if q.Rank {
		var rank, of uint64
		if err := t.c.conn.QueryRow(ctx, queryExplainRank, q.Count, q.Site, from, to).Scan(&rank, &of); err != nil {
			return e, fmt.Errorf("rank of %s on its site in [%d, %d): %w", page, from, to, err)
		}
		if of > 0 {
			e.Rank, e.RankOf = int(rank), int(of)
		}
	}
	rows, err := t.c.conn.Query(ctx, queryExplainBusiest, q.Site, q.Path, from, to)
	if err != nil {
		return e, fmt.Errorf("busiest minute of %s in [%d, %d): %w", page, from, to, err)
	}
	for rows.Next() {
		if err := rows.Scan(&e.BusiestMinute, &e.BusiestHits); err != nil {
			rows.Close()
			return e, fmt.Errorf("busiest minute of %s: %w", page, err)
		}
		e.BusiestMinute = e.BusiestMinute.UTC()
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return e, fmt.Errorf("busiest minute of %s: %w", page, err)
	}
	if q.BaselineFrom.IsZero() || q.Domains <= 0 {
		return e, nil
	}
	base := min(q.BaselineFrom.Unix(), from)
	if err := t.c.conn.QueryRow(ctx, queryExplainReferred, from, q.Site, q.Path, base, to).Scan(&e.WindowHits, &e.BaselineHits); err != nil {
		return e, fmt.Errorf("referred hits of %s in [%d, %d): %w", page, base, to, err)
	}
	if e.WindowHits == 0 {
		return e, nil
	}
	rows, err = t.c.conn.Query(ctx, queryExplainDomains, from, q.Site, q.Path, base, to, min(q.Domains, maxReferrers))
	if err != nil {
		return e, fmt.Errorf("referrer domains of %s in [%d, %d): %w", page, base, to, err)
	}
	defer rows.Close()
	for rows.Next() {
		var d traffic.DomainHits
		if err := rows.Scan(&d.Domain, &d.Window, &d.Baseline); err != nil {
			return e, fmt.Errorf("referrer domains of %s: %w", page, err)
		}
		e.Domains = append(e.Domains, d)
	}
	if err := rows.Err(); err != nil {
		return e, fmt.Errorf("referrer domains of %s: %w", page, err)
	}
	return e, nil
}

// clients is who sent a page's hits in [from, to), from page_clients;
// nil when the window has no rows there (raw hits past their retention,
// or loaded before visitors were counted): no figures rather than zeros
// that would read as "no visitors".
func (t Traffic) clients(ctx context.Context, site, path string, from, to int64) (*traffic.Clients, error) {
	page := site + path
	rows, err := t.c.conn.Query(ctx, queryExplainClasses, site, path, from, to)
	if err != nil {
		return nil, fmt.Errorf("client classes of %s in [%d, %d): %w", page, from, to, err)
	}
	defer rows.Close()
	c := &traffic.Clients{}
	for rows.Next() {
		var class, counted uint8
		var n, keyed uint64
		if err := rows.Scan(&class, &counted, &n, &keyed); err != nil {
			return nil, fmt.Errorf("client classes of %s: %w", page, err)
		}
		if n == 0 {
			continue
		}
		c.Classes = append(c.Classes, traffic.ClassHits{Class: hit.Class(class).String(), Hits: n, Counted: counted == 1})
		if counted == 1 {
			c.Views += n
			c.Keyed += keyed
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("client classes of %s: %w", page, err)
	}
	if len(c.Classes) == 0 {
		return nil, nil
	}
	if c.Keyed > 0 {
		if err := t.c.conn.QueryRow(ctx, queryExplainVisitors, site, path, from, to).Scan(&c.Visitors, &c.TopViews, &c.Busiest); err != nil {
			return nil, fmt.Errorf("visitors of %s in [%d, %d): %w", page, from, to, err)
		}
	}
	return c, nil
}
