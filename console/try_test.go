package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/console"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/pipeline/sweep"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

// countedMinutes counts the scans a try asks of the store.
type countedMinutes struct {
	sweep.MinuteSource
	scans atomic.Int64
}

func (c *countedMinutes) ScanMinutes(ctx context.Context, q traffic.MinuteScan, fn func(site, path string, minute time.Time, hits uint64) error) error {
	c.scans.Add(1)
	return c.MinuteSource.ScanMinutes(ctx, q, fn)
}

// countedStore counts the top pages a try asks for.
type countedStore struct {
	console.Store
	tops atomic.Int64
}

func (c *countedStore) TopPages(ctx context.Context, site string, from, to time.Time, limit int) ([]console.PageViews, error) {
	c.tops.Add(1)
	return c.Store.TopPages(ctx, site, from, to, limit)
}

// tryBench is a console over a real ClickHouse, for trying rules.
type tryBench struct {
	ch      *clickhouse.Client
	base    string
	minutes *countedMinutes
	store   *countedStore
	seq     uint64
}

func startTry(t *testing.T, db string) *tryBench {
	t.Helper()
	chs := clickhousetest.Start(t)
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	cfg := clickhouse.DefaultConfig()
	cfg.Addr, cfg.Database = []string{chs.Addr}, db
	ch, err := clickhouse.Open(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	if _, err := ch.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	b := &tryBench{ch: ch, minutes: &countedMinutes{MinuteSource: ch.Counts()}, store: &countedStore{Store: ch.Console()}}
	ccfg := console.DefaultConfig()
	ccfg.Auth, ccfg.Listen = console.AuthNone, "127.0.0.1:0"
	loaded := rules.Rule{Name: "loaded", Site: "example.com", Path: "/pricing", Thresholds: rules.Thresholds{1000}, Window: rules.ParseWindow("1h"),
		Notify: rules.Notify{Recipients: []string{"ops@example.com"}}}
	if err := loaded.Validate("rules"); err != nil {
		t.Fatal(err)
	}
	srv, err := console.New(ccfg, console.Deps{Store: b.store, Minutes: b.minutes, Rules: func() []rules.Rule { return []rules.Rule{loaded} },
		Logger: logger, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	b.base = "http://" + srv.Addr()
	return b
}

// addHits loads n views of a page at a moment.
func (b *tryBench) addHits(t *testing.T, path string, n int, at time.Time) {
	t.Helper()
	b.seq++
	batch := hit.Batch{Seq: b.seq}
	for i := range n {
		batch.Hits = append(batch.Hits, hit.Hit{Time: at.Add(time.Duration(i) * time.Millisecond), Site: "example.com", Path: path,
			Method: "GET", Status: 200, Class: hit.ClassHuman, Offset: uint64(i+1) * 100})
	}
	if err := b.ch.Hits().InsertHits(context.Background(), []hit.Batch{batch}); err != nil {
		t.Fatal(err)
	}
}

// surgeHistory loads three days of /post's normal before hour h (20
// views in the hour before it), the data's start five days before, and
// a surge at h: 100 views at h+10m, 200 more at h+12m.
func (b *tryBench) surgeHistory(t *testing.T, h time.Time) {
	b.addHits(t, "/post", 1, h.Add(-5*24*time.Hour))
	for k := 1; k <= 3; k++ {
		b.addHits(t, "/post", 20, h.Add(-time.Duration(k)*24*time.Hour-30*time.Minute))
	}
	b.addHits(t, "/post", 100, h.Add(10*time.Minute))
	b.addHits(t, "/post", 200, h.Add(12*time.Minute))
}

// surgeRule is the tried rule: a spike that escalates and resolves.
const surgeRule = `name: try-spike
site: example.com
match: {prefix: /}
window: 1h
spike: {factor: 4, min_count: 50, baseline: {same_time: {days: 3}}}
escalate: [3]
notify_on: [fire, escalate, resolve]
rearm: {hysteresis: 0.5, settle: 30m}
notify: {recipients: [ops@example.com]}
`

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// tryClient is a browser-like client: cookies kept, the form's token
// read from the page.
type tryClient struct {
	c    *http.Client
	base string
}

func newTryClient(t *testing.T, base string) *tryClient {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &tryClient{c: &http.Client{Jar: jar}, base: base}
}

func (c *tryClient) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := c.c.Get(c.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// try posts a rule to path (/rules/try or its API), with the token of
// the form it first reads.
func (c *tryClient) try(t *testing.T, path, rule string, days int) (int, string) {
	t.Helper()
	st, page := c.get(t, "/rules/try")
	m := csrfRE.FindStringSubmatch(page)
	if st != http.StatusOK || m == nil {
		t.Fatalf("GET /rules/try: %d, no form token\n%s", st, page)
	}
	resp, err := c.c.PostForm(c.base+path, url.Values{"csrf": {html.UnescapeString(m[1])}, "rule": {rule}, "days": {fmt.Sprint(days)}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

type tryResult struct {
	Ran      bool
	Total    int
	Pages    int
	PagesOut int `json:"pages_left_out"`
	Learnt   string
	Notes    []string
	Errors   []struct {
		Key, Message string
		Line         int
	}
	Weeks    []struct{ Fire, Escalate, Resolve int }
	Messages []struct {
		At                               time.Time
		Rule, Site, Path, Event, Subject string
		Count                            uint64
	}
}

// tryJSON tries rule over the last days through the API, which must
// answer 200 with a result.
func (c *tryClient) tryJSON(t *testing.T, rule string, days int) tryResult {
	t.Helper()
	st, body := c.try(t, "/api/v1/rules/try", rule, days)
	if st != http.StatusOK {
		t.Fatalf("try: %d\n%s", st, body)
	}
	var got tryResult
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	return got
}

// A rule tried over a week of real counts: its would-be messages are
// what sweep.Backtest (sweeper backtest) finds over the same minutes, a
// fire when the surge began, an escalation and a resolve, counted in
// their week, with the worker's subject lines, and drawn on the page's
// chart; nothing is recorded.
func TestTryRuleBacktests(t *testing.T) {
	b := startTry(t, "pw_try")
	now := time.Now().UTC()
	h := now.Truncate(time.Hour).Add(-48 * time.Hour)
	b.surgeHistory(t, h)
	c := newTryClient(t, b.base)

	st, body := c.try(t, "/api/v1/rules/try", surgeRule, 7)
	if st != http.StatusOK {
		t.Fatalf("try: %d\n%s", st, body)
	}
	var got tryResult
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	// The same backtest, run directly over the same minutes.
	want := rules.Rule{Name: "try-spike", Site: "example.com", Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"),
		Spike:    &rules.Spike{Factor: 4, MinCount: 50, Baseline: rules.Baseline{SameTime: &rules.SameTime{Days: 3}}},
		Escalate: []float64{3}, NotifyOn: []rules.Event{rules.EventFire, rules.EventEscalate, rules.EventResolve},
		Rearm: rules.Rearm{Hysteresis: 0.5, Settle: 30 * time.Minute}, Notify: rules.Notify{Recipients: []string{"ops@example.com"}}}
	if err := want.Validate("rules"); err != nil {
		t.Fatal(err)
	}
	to := time.Now().UTC().Truncate(time.Hour).Add(time.Hour)
	xs, err := sweep.Backtest(context.Background(), b.ch.Counts(), []rules.Rule{want}, to.Add(-7*24*time.Hour), time.Now().UTC(),
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var gotLines, wantLines []string
	for _, m := range got.Messages {
		gotLines = append(gotLines, fmt.Sprintf("%s %s %s %d", m.Event, m.At.Sub(h), m.Path, m.Count))
	}
	for _, x := range xs {
		ev := x.Event
		if ev == "" {
			ev = "fire"
		}
		wantLines = append(wantLines, fmt.Sprintf("%s %s %s %d", ev, x.CrossedAt.Sub(h), x.Path, x.Count))
	}
	if strings.Join(gotLines, "\n") != strings.Join(wantLines, "\n") {
		t.Errorf("tried:\n%s\nsweep.Backtest:\n%s", strings.Join(gotLines, "\n"), strings.Join(wantLines, "\n"))
	}
	if len(gotLines) < 3 || gotLines[0] != "fire 10m59s /post 100" || gotLines[1] != "escalate 12m59s /post 300" ||
		!strings.HasPrefix(gotLines[len(gotLines)-1], "resolve ") {
		t.Errorf("want a fire at h+10m59s (100 views), an escalation at h+12m59s (300) and a resolve last; got\n%s", strings.Join(gotLines, "\n"))
	}
	if r := got.Messages[len(got.Messages)-1]; !r.At.After(h.Add(time.Hour)) || r.At.After(h.Add(3*time.Hour)) {
		t.Errorf("resolved at h+%s: want once the surge left the hour's window and settled, within 3h", r.At.Sub(h))
	}
	if len(got.Weeks) != 1 || got.Weeks[0].Fire != 1 || got.Weeks[0].Escalate != 1 || got.Weeks[0].Resolve != 1 {
		t.Errorf("weeks %+v: want 1 fire, 1 escalate, 1 resolve", got.Weeks)
	}
	if !strings.HasPrefix(got.Messages[0].Subject, "[pagewatch] /post ") {
		t.Errorf("subject %q", got.Messages[0].Subject)
	}
	if got.Pages != 1 || got.PagesOut != 0 || len(got.Notes) != 0 || got.Learnt != "" {
		t.Errorf("pages %d, left out %d, notes %q, learnt %q (a spike rule remembers nothing)", got.Pages, got.PagesOut, got.Notes, got.Learnt)
	}

	// The page: the table, and the chart of /post with a marker each.
	st, page := c.try(t, "/rules/try", surgeRule, 7)
	if st != http.StatusOK {
		t.Fatalf("try page: %d", st)
	}
	for _, want := range []string{`data-testid="try-chart" data-rule="try-spike" data-site="example.com" data-path="/post"`,
		`data-testid="chart-episode" data-event="fire"`, `data-testid="chart-episode" data-event="escalate"`, `data-testid="chart-episode" data-event="resolve"`,
		`<span data-testid="try-total">3</span>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	// Thirty days: the same messages, counted in five weeks.
	_, body = c.try(t, "/api/v1/rules/try", surgeRule, 30)
	var month tryResult
	if err := json.Unmarshal([]byte(body), &month); err != nil {
		t.Fatal(err)
	}
	var f, e, r int
	for _, w := range month.Weeks {
		f, e, r = f+w.Fire, e+w.Escalate, r+w.Resolve
	}
	if len(month.Weeks) != 5 || month.Total != got.Total || f != 1 || e != 1 || r != 1 {
		t.Errorf("30 days: %d messages, weeks %+v", month.Total, month.Weeks)
	}
	// A setting that judges worse than the default is said, as sweeper
	// check says it.
	_, body = c.try(t, "/api/v1/rules/try", "name: two-weeks\nsite: example.com\nmatch: {prefix: /}\nwindow: 1h\nunusual: {weeks: 2}\nnotify: {recipients: [ops@example.com]}\n", 7)
	var short tryResult
	if err := json.Unmarshal([]byte(body), &short); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	if !slices.ContainsFunc(short.Notes, func(n string) bool {
		return n == "Rule two-weeks: unusual.weeks 2: under 3, a weekend day's normal is read mostly from weekdays; use 3 or more."
	}) {
		t.Errorf("unusual.weeks 2: notes %q", short.Notes)
	}
}

// A rule with a mistake is refused with its key and line named, and
// nothing is read; nor is anything read for a form without its token.
func TestTryRuleRefusesBadRule(t *testing.T) {
	b := startTry(t, "pw_try_bad")
	c := newTryClient(t, b.base)
	bad := strings.Replace(surgeRule, "factor: 4", "factor: 0.5", 1)
	st, body := c.try(t, "/api/v1/rules/try", bad, 7)
	if st != http.StatusUnprocessableEntity {
		t.Fatalf("bad rule: %d\n%s", st, body)
	}
	var got tryResult
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Ran || len(got.Errors) != 1 || got.Errors[0].Key != "sweeper.rules[0].spike.factor" || got.Errors[0].Line != 5 {
		t.Errorf("errors %+v: want sweeper.rules[0].spike.factor at line 5", got.Errors)
	}
	// An unknown key, in a list: strict decoding names it and its line.
	st, page := c.try(t, "/rules/try", "- name: a\n  treshold: 10\n", 7)
	if st != http.StatusUnprocessableEntity || !strings.Contains(page, `data-key="sweeper.rules[0].treshold"`) ||
		!strings.Contains(page, "(line 2)") {
		t.Errorf("unknown key: %d\n%s", st, page)
	}
	// Not YAML at all; and hostile text stays text.
	st, page = c.try(t, "/rules/try", "name: [\n<script>alert(1)</script>", 7)
	if st != http.StatusUnprocessableEntity || strings.Contains(page, "<script>alert(1)") {
		t.Errorf("not YAML: %d\n%s", st, page)
	}
	// A loaded rule, to start from: written back without its empty keys.
	if st, page := c.get(t, "/rules/try?rule=loaded"); st != http.StatusOK ||
		!strings.Contains(page, "name: loaded\nsite: example.com\nmatch:\n    exact: /pricing\npath: /pricing\n") || strings.Contains(page, "zone:") {
		t.Errorf("the form from a loaded rule: %d\n%s", st, page)
	}
	// No token: refused before anything is parsed.
	resp, err := http.PostForm(b.base+"/rules/try", url.Values{"rule": {surgeRule}, "days": {"7"}})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("without the form's token: %d", resp.StatusCode)
	}
	if n, m := b.minutes.scans.Load(), b.store.tops.Load(); n != 0 || m != 0 {
		t.Errorf("refused rules read the store: %d scans, %d top pages", n, m)
	}
}

// A rule over more pages than a try replays: the first 50 are tried,
// the page says how many were left out, and the messages are of those.
func TestTryRuleBoundsPages(t *testing.T) {
	b := startTry(t, "pw_try_bound")
	at := time.Now().UTC().Add(-3 * time.Hour)
	for i := range 60 {
		b.addHits(t, fmt.Sprintf("/p%02d", i), 5, at)
	}
	rule := "name: every\nsite: example.com\nmatch: {prefix: /}\nthreshold: 2\nwindow: 1h\nnotify: {recipients: [ops@example.com]}\n"
	c := newTryClient(t, b.base)
	got := c.tryJSON(t, rule, 7)
	pages := map[string]bool{}
	for _, m := range got.Messages {
		pages[m.Path] = true
	}
	if got.Pages != 50 || got.PagesOut != 10 || got.Total != 50 || len(pages) != 50 || len(got.Notes) != 1 ||
		!strings.Contains(got.Notes[0], "Only 50 of the 60 pages") {
		t.Errorf("pages %d, left out %d, %d messages of %d pages, notes %q", got.Pages, got.PagesOut, got.Total, len(pages), got.Notes)
	}
	_, page := c.try(t, "/rules/try", rule, 7)
	if !strings.Contains(page, `data-testid="try-note">Only 50 of the 60 pages`) {
		t.Errorf("the page does not say pages were left out")
	}
	if n := strings.Count(page, `data-testid="try-chart"`); n != 6 {
		t.Errorf("%d charts, want 6", n)
	}
}

// A quiet page tried alone is judged against its site's data, not its
// own: /docs has a view every half hour and none for 4 hours each night
// while /shop, not tried, has views every few minutes. A sweep would not
// find the site late in those hours, and Try a rule says no "no data"
// (before, it said one and its resolve every night, from /docs's rows
// alone); nor does it judge /shop.
func TestTryRuleOfAQuietPageKnowsItsSiteFlows(t *testing.T) {
	b := startTry(t, "pw_try_quiet")
	day0 := time.Now().UTC().Truncate(24 * time.Hour).Add(-9 * 24 * time.Hour)
	batch := hit.Batch{Seq: 1}
	add := func(path string, at time.Time) {
		batch.Hits = append(batch.Hits, hit.Hit{Time: at, Site: "example.com", Path: path, Method: "GET", Status: 200,
			Class: hit.ClassHuman, Offset: uint64(len(batch.Hits)+1) * 100})
	}
	for at := day0; at.Before(time.Now().UTC()); at = at.Add(3 * time.Minute) {
		add("/shop", at)
		if at.Minute()%30 == 0 && at.Hour() >= 4 {
			add("/docs", at)
		}
	}
	if err := b.ch.Hits().InsertHits(context.Background(), []hit.Batch{batch}); err != nil {
		t.Fatal(err)
	}
	rule := "name: docs\nsite: example.com\nmatch: {exact: /docs}\nwindow: 1h\nunusual: {direction: both, min_count: 1}\n" +
		"notify_on: [fire, escalate, resolve]\nnotify: {recipients: [ops@example.com]}\n"
	c := newTryClient(t, b.base)
	got := c.tryJSON(t, rule, 7)
	for _, m := range got.Messages {
		if m.Path != "/docs" {
			t.Errorf("%s %s %q: %s; want nothing but of /docs, and no \"no data\" from a site that flows", m.At, m.Event, m.Path, m.Subject)
		}
	}
	if got.Pages != 1 {
		t.Errorf("%d pages tried, want /docs alone", got.Pages)
	}
	if got.Learnt != "40 days" {
		t.Errorf("learnt %q before the days tried; want what an unusual rule remembers, 40 days", got.Learnt)
	}
}
