package sweep

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/pipeline/sweep/pagestate"
)

// addPeople loads perHour views of path, every 10 minutes over [from,
// to), from browsers of the given client keys in turn, as one batch.
func (b *bundle) addPeople(t *testing.T, path string, perHour int, from, to time.Time, clients []uint64) {
	t.Helper()
	b.seq++
	batch := hit.Batch{Seq: b.seq}
	for at := from; at.Before(to); at = at.Add(10 * time.Minute) {
		for i := 0; i < perHour/6; i++ {
			batch.Hits = append(batch.Hits, hit.Hit{Time: at, Site: "example.com", Path: path, Class: hit.ClassHuman,
				Client: clients[len(batch.Hits)%len(clients)], Offset: uint64(len(batch.Hits))})
		}
	}
	if err := b.ch.Hits().InsertHits(context.Background(), []hit.Batch{batch}); err != nil {
		t.Fatal(err)
	}
}

// guardSetup is the shipped rule (deploy/rules/spike-default.yaml) over
// two pages with 60 views an hour from 300 people, from 15 days before
// now to 7 hours after (loaded ahead, so that the later sweeps see the
// pages and the site as usual).
func guardSetup(t *testing.T) (*bundle, time.Time) {
	t.Helper()
	b := setup(t)
	b.cfg.Rules = nil
	b.cfg.RulesPath = "../../deploy/rules/spike-default.yaml"
	now := time.Now().UTC().Truncate(time.Minute)
	for _, p := range []string{"/a", "/b"} {
		b.addPeople(t, p, 60, now.Add(-15*24*time.Hour), now.Add(7*time.Hour), keys(1000, 300))
	}
	return b, now
}

// scraper is a scraper with a browser's user agent from 2 addresses,
// each sending half its requests: neither client key alone is most of
// the surge, the two together are (traffic.FewClients).
var scraper = []uint64{1, 2}

// held reads a page's state through pagestate, as the console does.
func (b *bundle) held(t *testing.T, path string) (pagestate.Summary, bool) {
	t.Helper()
	st, ok, err := pagestate.NewReader(b.bus).Read(context.Background(), "unusual", "example.com", path, false)
	if err != nil {
		t.Fatal(err)
	}
	return st, ok
}

func events(jobs []crossing.Crossing) string {
	var out []string
	for _, x := range jobs {
		out = append(out, x.Path+" "+x.Event)
	}
	return strings.Join(out, ", ")
}

// The "done when": a scraper with a browser's user agent from 2
// addresses makes a surge beside a real one of the same size from 500.
// The shipped rule fires on the real one only; the scraper's page is
// held, and reads back as "mostly one client".
func TestShippedRuleFiresOnPeopleNotOnAScraper(t *testing.T) {
	b, now := guardSetup(t)
	b.addPeople(t, "/a", 7200, now.Add(-20*time.Minute), now, scraper) // 2,400 views from 2 clients
	b.addPeople(t, "/b", 7200, now.Add(-20*time.Minute), now, keys(5000, 500))
	c := &clock{t: now}
	b.sweep(t, b.sweeper(t, c))

	jobs := b.jobs(t)
	if events(jobs) != "/b fire" {
		t.Fatalf("jobs: %s; want only /b fire", events(jobs))
	}
	w := jobs[0].Why
	if w == nil || w.Clients == nil || w.Clients.Visitors < 500 || w.Clients.Mostly != "" || w.Clients.TopShare > 0.05 {
		t.Errorf("/b's why clients: %+v, want 500+ visitors, no busiest client, no mark", w.Clients)
	}
	st, ok := b.held(t, "/a")
	if !ok || st.Held == nil || st.Held.Mostly != crossing.MostlyOneClient || !strings.HasPrefix(st.Held.Reason, "mostly one client: ") || st.Open != nil {
		t.Fatalf("/a's state: %+v held %+v; want held as mostly one client, no episode", st, st.Held)
	}
	if !strings.Contains(st.Held.Reason, "of 2,") {
		t.Errorf("reason %q, want the share of the window's views", st.Held.Reason)
	}
	if st, ok := b.held(t, "/b"); !ok || st.Held != nil || st.Open == nil {
		t.Errorf("/b's state: %+v held %+v; want an open episode, nothing held", st, st.Held)
	}
}

// A held surge is no episode: it neither escalates nor comes "back to
// normal", its hold is cleared once it is over, and the page fires once
// real people make most of a window.
func TestHeldSurgeSendsNoEscalateNorResolveAndFiresForPeopleLater(t *testing.T) {
	b, now := guardSetup(t)
	c := &clock{t: now}
	s := b.sweeper(t, c)
	b.addPeople(t, "/a", 7200, now.Add(-20*time.Minute), now, scraper)
	b.sweep(t, s)
	first, _ := b.held(t, "/a")
	if first.Held == nil || first.Held.Checked.IsZero() {
		t.Fatalf("after the surge: held %+v, want held and checked", first.Held)
	}
	// The scraper goes on, past 4 × the level (what would escalate).
	c.set(now.Add(5 * time.Minute))
	b.addPeople(t, "/a", 60000, now, now.Add(5*time.Minute), scraper)
	b.sweep(t, s)
	if st, _ := b.held(t, "/a"); st.Held == nil || !st.Held.Since.Equal(first.Held.Since) || st.Open != nil {
		t.Errorf("the surge goes on: held %+v open %+v; want still held since %v, no episode", st.Held, st.Open, first.Held.Since)
	}
	// Hours later the window is empty: nothing to resolve.
	c.set(now.Add(3 * time.Hour))
	b.sweep(t, s)
	c.set(now.Add(5 * time.Hour))
	b.sweep(t, s)
	if jobs := b.jobs(t); len(jobs) != 0 {
		t.Fatalf("jobs for a held surge: %s; want none", events(jobs))
	}
	if st, _ := b.held(t, "/a"); st.Held != nil || st.Open != nil {
		t.Errorf("after the surge: held %+v open %+v; want nothing", st.Held, st.Open)
	}

	// Another scraper surge, held; then people come in the same window.
	at := now.Add(6 * time.Hour)
	c.set(at)
	b.addPeople(t, "/a", 3600, at.Add(-20*time.Minute), at, []uint64{3})
	b.sweep(t, s)
	if st, _ := b.held(t, "/a"); st.Held == nil || len(b.jobs(t)) != 0 {
		t.Fatalf("second scraper surge: held %+v, jobs %s; want held, none", st.Held, events(b.jobs(t)))
	}
	c.set(at.Add(5 * time.Minute))
	b.addPeople(t, "/a", 36000, at, at.Add(5*time.Minute), keys(9000, 600))
	b.sweep(t, s)
	jobs := b.jobs(t)
	if events(jobs) != "/a fire" {
		t.Fatalf("people came: jobs %s, want /a fire", events(jobs))
	}
	if cl := jobs[0].Why.Clients; cl == nil || cl.Visitors < 600 || cl.TopShare > 0.5 {
		t.Errorf("why clients %+v", cl)
	}
	if st, _ := b.held(t, "/a"); st.Held != nil || st.Open == nil {
		t.Errorf("after firing: held %+v open %+v; want an episode, nothing held", st.Held, st.Open)
	}
}

// countingExplainer answers every page with the same clients.
type countingExplainer struct {
	mu    sync.Mutex
	calls int
	c     *traffic.Clients
	err   error
}

func (e *countingExplainer) Explain(context.Context, traffic.ExplainQuery) (traffic.Explanation, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	return traffic.Explanation{Clients: e.c}, e.err
}

// guardCases are n verdicts of an unusual rule, each about to open a
// surge (one crossing fired), the first checked an hour ago.
func guardCases(n int, now time.Time) []*verdict {
	r := &rules.Rule{Name: "unusual", Unusual: &rules.Unusual{Direction: rules.Both}}
	var vs []*verdict
	for i := range n {
		v := &verdict{key: fmt.Sprintf("unusual.p%02d", i), rule: r, next: rules.State{Episode: 1, Open: &rules.Episode{Since: now}},
			fired: []crossing.Crossing{{Key: "k"}}}
		v.guard = &guardCase{obs: observation{count: uint64(100 + i), pt: point{at: now, from: now.Add(-time.Hour), to: now}}}
		if i == 0 {
			v.prev.Held = &pagestate.Held{Since: now.Add(-time.Hour), Checked: now.Add(-time.Hour), Mostly: crossing.MostlyOneClient, Reason: "mostly one client: 90% of 1,000 views"}
		}
		vs = append(vs, v)
	}
	return vs
}

// A sweep reads the clients of at most maxGuardChecks surges, those
// never read first, largest first; the rest are held until a later one.
// Unreadable clients, or no explainer, let the surge fire (fail open).
func TestGuardBoundsItsChecksAndFailsOpen(t *testing.T) {
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	people := &traffic.Clients{Views: 100, Keyed: 100, Visitors: 60, TopViews: 5, Classes: []traffic.ClassHits{{Class: "human", Hits: 100, Counted: true}}}
	e := &countingExplainer{c: people}
	s := &Sweeper{explainer: e, logger: slog.New(slog.DiscardHandler), now: func() time.Time { return now }}
	vs := s.guardClients(context.Background(), guardCases(maxGuardChecks+5, now))
	if e.calls != maxGuardChecks {
		t.Errorf("%d checks, want %d", e.calls, maxGuardChecks)
	}
	var fired, held []string
	for _, v := range vs {
		switch {
		case len(v.fired) > 0 && v.held == nil:
			fired = append(fired, v.key)
		case len(v.fired) == 0 && v.held != nil && v.next.Open == nil:
			held = append(held, v.key)
		default:
			t.Errorf("%s: fired %d, held %+v, open %+v", v.key, len(v.fired), v.held, v.next.Open)
		}
	}
	// Held unchecked: the 4 smallest never read, and p00, read an hour
	// ago, which keeps its last reading.
	if want := "[unusual.p00 unusual.p01 unusual.p02 unusual.p03 unusual.p04]"; fmt.Sprint(held) != want || len(fired) != maxGuardChecks {
		t.Errorf("held %v, want %s; fired %d", held, want, len(fired))
	}
	for _, v := range vs {
		if v.key == "unusual.p00" && (v.held.Mostly != crossing.MostlyOneClient || !v.held.Checked.Equal(now.Add(-time.Hour)) || !v.held.Since.Equal(now.Add(-time.Hour))) {
			t.Errorf("p00 held %+v, want its last reading kept", v.held)
		}
		if v.key == "unusual.p01" && (v.held.Mostly != "" || !v.held.Checked.IsZero() || !strings.HasPrefix(v.held.Reason, "not checked yet")) {
			t.Errorf("p01 held %+v, want not checked yet", v.held)
		}
	}

	for _, s := range []*Sweeper{
		{explainer: &countingExplainer{err: context.DeadlineExceeded}, logger: slog.New(slog.DiscardHandler), now: func() time.Time { return now }},
		{logger: slog.New(slog.DiscardHandler), now: func() time.Time { return now }},
		{explainer: &countingExplainer{}, logger: slog.New(slog.DiscardHandler), now: func() time.Time { return now }}, // no client data
	} {
		for _, v := range s.guardClients(context.Background(), guardCases(3, now)) {
			if len(v.fired) != 1 || v.held != nil {
				t.Errorf("explainer %T: %s fired %d held %+v; want it to fire", s.explainer, v.key, len(v.fired), v.held)
			}
		}
	}
}

// What the guard holds: the busiest client's share of the keyed views,
// or the busiest few's together, when most views are keyed; the unknown share, when some hit is known.
func TestJudgeClients(t *testing.T) {
	human := func(n uint64) traffic.ClassHits { return traffic.ClassHits{Class: "human", Hits: n, Counted: true} }
	unknown := func(n uint64) traffic.ClassHits { return traffic.ClassHits{Class: "unknown", Hits: n, Counted: true} }
	for _, tc := range []struct {
		name string
		c    traffic.Clients
		want string
	}{
		{"one client", traffic.Clients{Views: 1204, Keyed: 1204, Visitors: 3, TopViews: 1168, Busiest: []uint64{1168, 30, 6}, Classes: []traffic.ClassHits{human(1204)}},
			"mostly one client: one client key sent 97% of 1,204 views"},
		{"one client, two addresses", traffic.Clients{Views: 1204, Keyed: 1204, Visitors: 40, TopViews: 600, Busiest: []uint64{600, 580, 1}, Classes: []traffic.ClassHits{human(1204)}},
			"mostly one client: 2 client keys sent 98% of 1,204 views"},
		{"people", traffic.Clients{Views: 1204, Keyed: 1204, Visitors: 500, TopViews: 10, Busiest: []uint64{10, 9, 9}, Classes: []traffic.ClassHits{human(1204)}}, ""},
		{"few keyed views", traffic.Clients{Views: 1000, Keyed: 10, Visitors: 1, TopViews: 10, Busiest: []uint64{10}, Classes: []traffic.ClassHits{human(1000)}}, ""},
		{"scripts", traffic.Clients{Views: 1000, Keyed: 1000, Visitors: 400, TopViews: 9, Classes: []traffic.ClassHits{unknown(800), human(200)}}, "mostly unidentified clients: 80% of 1,000 hits"},
		{"no user agents logged", traffic.Clients{Views: 1000, Keyed: 1000, Visitors: 400, TopViews: 9, Classes: []traffic.ClassHits{unknown(1000)}}, ""},
	} {
		if _, got := judgeClients(&tc.c, 0.5, 0.5); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	c := traffic.Clients{Views: 100, Keyed: 100, Visitors: 1, TopViews: 100, Busiest: []uint64{100}, Classes: []traffic.ClassHits{unknown(100), human(1)}}
	if m, _ := judgeClients(&c, 0, 0); m != "" {
		t.Errorf("guard off: %q", m)
	}
}
