package console

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/pipeline/silence"
)

// fakeStore is the Store in memory.
type fakeStore struct {
	mu        sync.Mutex
	crossings []CrossingRow
	outcomes  []OutcomeRow
	actions   []Action
	live      []LivePage
	liveCalls int
	days      []DayTotal
	series    []traffic.MinuteHits
	siteHours []traffic.SiteHour
	refs      []traffic.Referrer
	top       []PageViews
	fresh     Freshness
	visitors  []traffic.MinuteHits
	classes   []ClassCount
}

func (f *fakeStore) Crossings(_ context.Context, q HistoryQuery) ([]CrossingRow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []CrossingRow
	for _, x := range f.crossings {
		if (q.Site == "" || q.Site == x.Site) && (q.Rule == "" || q.Rule == x.Rule) && (q.Path == "" || q.Path == x.Path) {
			out = append(out, x)
		}
	}
	if q.Offset >= len(out) {
		return nil, nil
	}
	out = out[q.Offset:]
	return out[:min(len(out), q.Limit)], nil
}

func (f *fakeStore) Outcomes(_ context.Context, keys []string) ([]OutcomeRow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.outcomes, nil
}

func (f *fakeStore) RecordAction(_ context.Context, a Action) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, a)
	return nil
}

func (f *fakeStore) Actions(context.Context, time.Time, int) ([]Action, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.actions, nil
}

func (f *fakeStore) LastFired(context.Context, []string, time.Time) ([]CrossingRow, error) {
	return f.crossings, nil
}

func (f *fakeStore) Live(context.Context, LiveQuery) ([]LivePage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.liveCalls++
	return append([]LivePage(nil), f.live...), nil
}

func (f *fakeStore) DayTotals(_ context.Context, sites, paths []string, _, _ time.Time) ([]DayTotal, error) {
	var out []DayTotal
	for _, d := range f.days {
		if slices.Contains(sites, d.Site) && slices.Contains(paths, d.Path) {
			out = append(out, d)
		}
	}
	return out, nil
}

func (f *fakeStore) PageSeries(context.Context, string, string, time.Time, time.Time) ([]traffic.MinuteHits, error) {
	return f.series, nil
}

func (f *fakeStore) SiteStart(context.Context, string) (time.Time, error) { return time.Time{}, nil }

func (f *fakeStore) PageHourSeries(context.Context, string, string, time.Time, time.Time) ([]traffic.MinuteHits, error) {
	return f.series, nil
}

func (f *fakeStore) SiteHours(context.Context, time.Time, time.Time) ([]traffic.SiteHour, error) {
	return f.siteHours, nil
}

func (f *fakeStore) TopReferrers(context.Context, string, string, time.Time, time.Time, int) ([]traffic.Referrer, error) {
	return f.refs, nil
}

func (f *fakeStore) PageCounts(_ context.Context, sites, paths []string, _, _ time.Time) ([]PageViews, error) {
	var out []PageViews
	for _, p := range f.top {
		if slices.Contains(sites, p.Site) && slices.Contains(paths, p.Path) {
			out = append(out, p)
		}
	}
	return out, nil
}

func (f *fakeStore) TopPages(context.Context, string, time.Time, time.Time, int) ([]PageViews, error) {
	return f.top, nil
}

func (f *fakeStore) PageVisitors(context.Context, string, string, time.Time, time.Time, time.Duration) ([]traffic.MinuteHits, error) {
	return f.visitors, nil
}

func (f *fakeStore) PageClasses(context.Context, string, string, time.Time, time.Time) ([]ClassCount, error) {
	return f.classes, nil
}

func (f *fakeStore) Freshness(context.Context) (Freshness, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fresh, nil
}

// fakeDead is the dead-letter stream in memory.
type fakeDead struct {
	mu      sync.Mutex
	letters []DeadLetter
	retried []uint64
}

func (d *fakeDead) List(context.Context, int) ([]DeadLetter, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]DeadLetter(nil), d.letters...), nil
}

func (d *fakeDead) take(seq uint64) (DeadLetter, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, l := range d.letters {
		if l.Seq == seq {
			d.letters = append(d.letters[:i], d.letters[i+1:]...)
			return l, true
		}
	}
	return DeadLetter{}, false
}

func (d *fakeDead) Retry(_ context.Context, seq uint64) (DeadLetter, error) {
	l, ok := d.take(seq)
	if !ok {
		return l, io.EOF
	}
	d.mu.Lock()
	d.retried = append(d.retried, seq)
	d.mu.Unlock()
	return l, nil
}

func (d *fakeDead) Discard(_ context.Context, seq uint64) (DeadLetter, error) {
	l, ok := d.take(seq)
	if !ok {
		return l, io.EOF
	}
	return l, nil
}

// fakeStates says the pricing rule fired on /pricing ten minutes ago
// and holds a pending crossing for the hostile page.
type fakeStates struct{ now time.Time }

func (f fakeStates) State(_ context.Context, rule, site, path string, sum bool) (RuleState, bool, error) {
	switch {
	case rule == "pricing" && path == "/pricing":
		return RuleState{Fired: []uint64{100}, LastFired: f.now.Add(-10 * time.Minute)}, true, nil
	case rule == "any" && path == hostileScript:
		return RuleState{Pending: 1}, true, nil
	case rule == "any" && path == hostileImg:
		return RuleState{Held: heldReason}, true, nil
	}
	return RuleState{}, false, nil
}

// fakeSilences keeps silences in memory.
type fakeSilences struct {
	mu   sync.Mutex
	list []silence.Silence
}

func (f *fakeSilences) List(context.Context) ([]silence.Silence, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]silence.Silence(nil), f.list...), nil
}

func (f *fakeSilences) Add(_ context.Context, sl silence.Silence, now time.Time) (silence.Silence, error) {
	if err := sl.Validate(); err != nil {
		return sl, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	sl.ID = fmt.Sprintf("s%d", len(f.list)+1)
	f.list = append(f.list, sl)
	return sl, nil
}

func (f *fakeSilences) Expire(_ context.Context, id string, now time.Time) (silence.Silence, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.list {
		if f.list[i].ID == id {
			f.list[i].EndsAt = now
			return f.list[i], nil
		}
	}
	return silence.Silence{}, io.EOF
}

const (
	hostileScript = "/<script>alert(1)</script>"
	hostileImg    = `/"><img src=x onerror=alert(1)>`
)

type bundle struct {
	s        *Server
	srv      *httptest.Server
	store    *fakeStore
	dead     *fakeDead
	silences *fakeSilences
	// revocations are the logged-out sessions.
	revocations *fakeRevocations
	token       string
}

// setup serves a console built by build through httptest.
func setup(t *testing.T, mutate func(*Config), deps ...func(*Deps)) *bundle {
	t.Helper()
	b := build(t, mutate, deps...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = b.s.live.Run(ctx); close(done) }()
	b.srv = httptest.NewServer(b.s.Handler())
	t.Cleanup(func() { b.srv.Close(); cancel(); <-done })
	return b
}

// build makes a console over fakes: alice (operator) and bob (viewer),
// a viewer token, two rules, the clock at 2026-11-24 12:00:30 UTC. deps
// may replace what it reads from.
func build(t *testing.T, mutate func(*Config), deps ...func(*Deps)) *bundle {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte("pw-alice"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	hashBob, _ := bcrypt.GenerateFromPassword([]byte("pw-bob"), bcrypt.MinCost)
	now := time.Date(2026, 11, 24, 12, 0, 30, 0, time.UTC)
	st := &fakeStore{
		crossings: []CrossingRow{
			{Key: "pricing.k.1", Rule: "pricing", Site: "example.com", Path: "/pricing", Window: "1h", Threshold: 100, Count: 1234, CrossedAt: now.Add(-time.Hour)},
			{Key: "any.k.2", Rule: "any", Site: "example.com", Path: hostileScript, Window: "1h", Threshold: 10, Count: 11, CrossedAt: now.Add(-2 * time.Hour)},
			{Key: "any.k.3", Rule: "any", Site: "example.com", Path: hostileImg, Window: "1h", Threshold: 10, Count: 12, CrossedAt: now.Add(-3 * time.Hour)},
		},
		outcomes: []OutcomeRow{{Key: "pricing.k.1", At: now.Add(-time.Hour), Outcome: "failed", SMTPCode: 550, Error: "<b>no</b>"}},
		live: []LivePage{
			{Site: "example.com", Path: "/pricing", Views5m: 7, Views1h: 1234, Visitors5m: 5, Visitors1h: 1001, Minutes: make([]uint64, 60)},
			{Site: "example.com", Path: hostileScript, Views5m: 1, Views1h: 2, Minutes: make([]uint64, 60)},
			{Site: "example.com", Path: hostileImg, Views5m: 1, Views1h: 3, Minutes: make([]uint64, 60)},
		},
		series: []traffic.MinuteHits{{Minute: now.Add(-10 * time.Minute).Truncate(time.Minute), Hits: 5}},
		refs:   []traffic.Referrer{{Referer: `https://evil.example/"><script>alert(2)</script>`, Hits: 3}},
		top:    []PageViews{{Site: "example.com", Path: "/pricing", Views: 90}, {Site: "example.com", Path: hostileScript, Views: 9}},
		// /pricing's last 7 days: a median day of 2400, 100 an hour.
		days: []DayTotal{{Site: "example.com", Path: "/pricing", Hits: 2400}, {Site: "example.com", Path: "/pricing", Hits: 2400},
			{Site: "example.com", Path: "/pricing", Hits: 2400}, {Site: "example.com", Path: "/pricing", Hits: 2400}, {Site: "example.com", Path: "/pricing", Hits: 9000}},
	}
	dead := &fakeDead{letters: []DeadLetter{
		{Seq: 7, Kind: "jobs", Reason: "550 mailbox unavailable", Key: "pricing.k.1", Rule: "pricing", Site: "example.com", Path: "/pricing", Receiver: "email"},
		{Seq: 8, Kind: "hits", Reason: "bad magic"},
	}}
	cfg := DefaultConfig()
	cfg.Users = []User{{Name: "alice", PasswordHash: string(hash), Role: Operator}, {Name: "bob", PasswordHash: string(hashBob), Role: Viewer}}
	token := "viewer-token-0123456789"
	cfg.Tokens = []Token{{Name: "ci", Token: secret.New(token), Role: Viewer}}
	if mutate != nil {
		mutate(&cfg)
	}
	rs := []rules.Rule{{Name: "pricing", Site: "example.com", Path: "/pricing", Thresholds: rules.Thresholds{100}, Window: rules.ParseWindow("1h"), Notify: rules.Notify{Recipients: []string{"a@example.com"}}},
		{Name: "any", Site: "example.com", Match: rules.Match{Prefix: "/"}, Thresholds: rules.Thresholds{10}, Window: rules.ParseWindow("1h"), Notify: rules.Notify{Recipients: []string{"a@example.com"}}}}
	for i := range rs {
		if err := rs[i].Validate("rules"); err != nil {
			t.Fatal(err)
		}
	}
	sil, rev := &fakeSilences{}, &fakeRevocations{}
	d := Deps{Store: st, DeadLetters: dead, Silences: sil, RuleStates: fakeStates{now: now}, Revocations: rev, Rules: func() []rules.Rule { return rs },
		Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(), Now: func() time.Time { return now }}
	for _, f := range deps {
		f(&d)
	}
	s, err := New(cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{s: s, store: st, dead: dead, silences: sil, revocations: rev, token: token}
}

func secretOf(s string) secret.Value { return secret.New(s) }

// client is a browser: cookies kept, redirects not followed.
func (b *bundle) client(*testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, body string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token in:\n%s", body)
	}
	return m[1]
}

func (b *bundle) login(t *testing.T, user, password string) (*http.Client, *http.Response, string) {
	t.Helper()
	c := b.client(t)
	_, page := get(t, c, b.srv.URL+"/login")
	resp, err := c.PostForm(b.srv.URL+"/login", url.Values{"user": {user}, "password": {password}, "csrf": {csrfOf(t, page)}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return c, resp, string(body)
}

func TestLoginAndRoles(t *testing.T) {
	b := setup(t, nil)
	anon := b.client(t)
	if resp, _ := get(t, anon, b.srv.URL+"/history"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Errorf("no login: got %d to %q, want 303 to /login", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := get(t, anon, b.srv.URL+"/api/v1/history"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("API without login: %d, want 401", resp.StatusCode)
	}
	_, resp, body := b.login(t, "alice", "wrong")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `data-testid="login-error"`) {
		t.Errorf("wrong password: %d\n%s", resp.StatusCode, body)
	}
	alice, resp, _ := b.login(t, "alice", "pw-alice")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("login: %d to %q, want 303 to /", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie && (!c.HttpOnly || c.SameSite != http.SameSiteStrictMode) {
			t.Errorf("session cookie %+v: want HttpOnly and SameSite=Strict", c)
		}
	}
	resp, page := get(t, alice, b.srv.URL+"/history")
	if resp.StatusCode != 200 {
		t.Fatalf("history: %d", resp.StatusCode)
	}
	for _, h := range []string{"Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("no %s header", h)
		}
	}
	if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("CSP %q", resp.Header.Get("Content-Security-Policy"))
	}

	// bob is a viewer: he sees, but a retry is refused with the 403 page.
	bob, _, _ := b.login(t, "bob", "pw-bob")
	_, dead := get(t, bob, b.srv.URL+"/dead")
	if n := strings.Count(dead, `data-testid="dead-letter"`); n != 2 {
		t.Errorf("dead letters shown: %d, want 2", n)
	}
	resp, err := bob.PostForm(b.srv.URL+"/dead/retry", url.Values{"seq": {"7"}, "csrf": {csrfOf(t, dead)}})
	if err != nil {
		t.Fatal(err)
	}
	body403, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body403), `data-testid="forbidden"`) {
		t.Errorf("viewer retry: %d\n%s", resp.StatusCode, body403)
	}
	// alice without the CSRF token: refused; with it: done and recorded.
	resp, err = alice.PostForm(b.srv.URL+"/dead/retry", url.Values{"seq": {"7"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("retry without CSRF token: %d, want 403", resp.StatusCode)
	}
	resp, err = alice.PostForm(b.srv.URL+"/dead/retry", url.Values{"seq": {"7"}, "csrf": {csrfOf(t, page)}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("operator retry: %d, want 303", resp.StatusCode)
	}
	if len(b.dead.retried) != 1 || b.dead.retried[0] != 7 || len(b.store.actions) != 1 || b.store.actions[0].User != "alice" || b.store.actions[0].Action != "retry" {
		t.Errorf("retried %v, recorded %+v", b.dead.retried, b.store.actions)
	}
	_, dead = get(t, alice, b.srv.URL+"/dead")
	if strings.Contains(dead, `data-seq="7"`) {
		t.Error("the retried dead letter is still listed")
	}
	_, hist := get(t, alice, b.srv.URL+"/history")
	if !strings.Contains(hist, `data-testid="action" data-action="retry"`) {
		t.Errorf("history does not show the retry:\n%s", hist)
	}

	// A bearer token reads the API; a viewer token cannot change.
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/api/v1/history", nil)
	req.Header.Set("Authorization", "Bearer "+b.token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("API with token: %d", resp.StatusCode)
	}
	req, _ = http.NewRequest(http.MethodPost, b.srv.URL+"/api/v1/dead/discard?seq=8", nil)
	req.Header.Set("Authorization", "Bearer "+b.token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("viewer token discard: %d, want 403", resp.StatusCode)
	}
}

func TestLoginIsRateLimited(t *testing.T) {
	b := setup(t, nil)
	var last *http.Response
	for i := 0; i < 6; i++ {
		_, last, _ = b.login(t, "alice", "wrong")
	}
	if last.StatusCode != http.StatusTooManyRequests || last.Header.Get("Retry-After") == "" {
		t.Errorf("6th failed login: %d, Retry-After %q; want 429 with Retry-After", last.StatusCode, last.Header.Get("Retry-After"))
	}
	// The right password is refused too while the limit holds.
	if _, resp, _ := b.login(t, "alice", "pw-alice"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("login while limited: %d, want 429", resp.StatusCode)
	}
}

// Paths are written by strangers: everywhere they appear they are text.
func TestHostilePathsAreText(t *testing.T) {
	b := setup(t, nil)
	alice, _, _ := b.login(t, "alice", "pw-alice")
	pages := []string{"/history", "/live", "/rules",
		"/page?" + url.Values{"site": {"example.com"}, "path": {hostileScript}}.Encode(),
		"/page?" + url.Values{"site": {"example.com"}, "path": {hostileImg}}.Encode(),
		"/api/v1/history", "/api/v1/live", "/api/v1/rules",
		"/api/v1/page?" + url.Values{"site": {"example.com"}, "path": {hostileImg}}.Encode()}
	for _, p := range pages {
		resp, body := get(t, alice, b.srv.URL+p)
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d\n%s", p, resp.StatusCode, body)
			continue
		}
		for _, bad := range []string{"<script>alert", "<img src=x", "<b>no</b>"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s holds %q unescaped", p, bad)
			}
		}
		if !strings.HasPrefix(p, "/api/") && !strings.Contains(body, "&lt;script&gt;alert(") {
			t.Errorf("%s does not show the hostile path as text", p)
		}
	}
	// The chart is drawn, with its series.
	_, body := get(t, alice, b.srv.URL+"/page?"+url.Values{"site": {"example.com"}, "path": {"/pricing"}}.Encode())
	if !regexp.MustCompile(`<svg[^>]*data-testid="chart"`).MatchString(body) || !regexp.MustCompile(`<path class="series" d="M[0-9]`).MatchString(body) {
		t.Errorf("no chart with a series:\n%s", body)
	}
	// The threshold and the normal are drawn, in views per minute.
	for _, want := range []string{`class="threshold"`, `class="baseline"`, "normal: 100 views an hour", "pricing: more than 100 views in 1h (1.7 per minute on average)"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestHistoryCountsAndPaging(t *testing.T) {
	b := setup(t, nil)
	alice, _, _ := b.login(t, "alice", "pw-alice")
	_, body := get(t, alice, b.srv.URL+"/history?rule=pricing")
	if !strings.Contains(body, `data-testid="crossing" data-site="example.com" data-rule="pricing" data-path="/pricing"`) ||
		!strings.Contains(body, `data-testid="count" data-value="1234">1234<`) {
		t.Errorf("crossing row:\n%s", body)
	}
	if strings.Contains(body, `data-rule="any"`) {
		t.Error("the rule filter let another rule through")
	}
	if resp, _ := get(t, alice, b.srv.URL+"/history?offset=20000"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("offset past the cap: %d, want 400", resp.StatusCode)
	}
	// Years at once would read every crossing kept: a stretch at a time.
	if resp, body := get(t, alice, b.srv.URL+"/api/v1/history?from=2000-01-01T00:00"); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "at most 92 days") {
		t.Errorf("26 years of history: %d %s, want 400", resp.StatusCode, body)
	}
	if resp, _ := get(t, alice, b.srv.URL+"/history?from=2026-01-01T00:00&to=2026-03-01T00:00"); resp.StatusCode != http.StatusOK {
		t.Errorf("two months of history: %d, want 200", resp.StatusCode)
	}
}

// TestOutcomesOldestFirst: a delivery that failed and was dead-lettered
// in the same second (ClickHouse's DateTime, ties ordered by name) reads
// failed, then dead_lettered, on the history and on the page view.
func TestOutcomesOldestFirst(t *testing.T) {
	b := setup(t, nil)
	at := time.Date(2026, 11, 24, 11, 0, 40, 0, time.UTC)
	b.store.mu.Lock()
	b.store.outcomes = []OutcomeRow{
		{Key: "pricing.k.1", At: at, Outcome: "dead_lettered", SMTPCode: 550},
		{Key: "pricing.k.1", At: at, Outcome: "failed", SMTPCode: 550},
		{Key: "pricing.k.1", At: at.Add(time.Minute), Outcome: "retried"},
		{Key: "pricing.k.1", At: at.Add(2 * time.Minute), Outcome: "sent"},
	}
	b.store.mu.Unlock()
	alice, _, _ := b.login(t, "alice", "pw-alice")
	for _, u := range []string{"/history?rule=pricing", "/page?site=example.com&path=/pricing"} {
		_, body := get(t, alice, b.srv.URL+u)
		var got []string
		for _, m := range regexp.MustCompile(`data-outcome="([a-z_]+)"`).FindAllStringSubmatch(body, -1) {
			got = append(got, m[1])
		}
		if want := "failed dead_lettered retried sent"; strings.Join(got, " ") != want {
			t.Errorf("%s: outcomes %q, want %q", u, strings.Join(got, " "), want)
		}
	}
}

func TestRatioShown(t *testing.T) {
	for _, c := range []struct {
		ratio, normal float64
		want          string
	}{{52, 0, "new"}, {3, 0.4, "new"}, {52, 1, "52.0×"}, {3, 100, "3.0×"}, {0.25, 100, "0.2×"}, {1234.56, 1, "1234.6×"}} {
		if got := ratioShown(c.ratio, c.normal); got != c.want {
			t.Errorf("ratioShown(%v, %v) = %q, want %q", c.ratio, c.normal, got, c.want)
		}
	}
}

// TestPipelineFreshness: data 3 s old reads 3s, not the age of its
// minute's start (up to 60 s).
func TestPipelineFreshness(t *testing.T) {
	b := setup(t, nil)
	now := time.Date(2026, 11, 24, 12, 0, 30, 0, time.UTC) // setup's clock
	b.store.mu.Lock()
	b.store.fresh = Freshness{LastHit: now.Add(-3 * time.Second), LastMinute: now.Truncate(time.Minute)}
	b.store.mu.Unlock()
	alice, _, _ := b.login(t, "alice", "pw-alice")
	_, body := get(t, alice, b.srv.URL+"/pipeline")
	if !regexp.MustCompile(`data-name="newest hit in ClickHouse"><div class="muted">[^<]*</div><div class="v">3s<`).MatchString(body) {
		t.Errorf("/pipeline: no newest hit 3s old:\n%s", body)
	}
}

func TestFormatRate(t *testing.T) {
	for v, want := range map[float64]string{2.0 / 60: "0.033", 40.0 / 60: "0.67", 1000.0 / 60: "16.7", 1.5: "1.5", 0: "0"} {
		if got := formatRate(v); got != want {
			t.Errorf("formatRate(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestLiveStreamUpdatesInPlace(t *testing.T) {
	b := setup(t, func(c *Config) { c.Auth, c.LiveInterval = AuthNone, 500*time.Millisecond })
	resp, body := get(t, b.client(t), b.srv.URL+"/live?site=example.com")
	// Numbers with thousands separators; visitors beside views, and a
	// dash where views had no client keys (the hostile pages' here).
	for _, want := range []string{`data-testid="views-1h" class="num">1,234<`, `data-testid="visitors-1h" class="num visitors">1,001<`,
		`data-testid="visitors-5m" class="num visitors">5<`, `title="` + noKeys + `">—<`} {
		if resp.StatusCode != 200 || !strings.Contains(body, want) {
			t.Fatalf("live page: %d, lacks %s\n%s", resp.StatusCode, want, body)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/api/v1/live/stream?site=example.com", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sresp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer sresp.Body.Close()
	if ct := sresp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("stream content type %q", ct)
	}
	b.store.mu.Lock()
	b.store.live[0].Views1h = 1300
	b.store.mu.Unlock()
	sc := bufio.NewScanner(sresp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") && strings.Contains(sc.Text(), `"views_1h":1300`) && strings.Contains(sc.Text(), `"visitors_1h":1001`) {
			if strings.Contains(sc.Text(), "<script>") {
				t.Errorf("stream holds a raw tag: %s", sc.Text())
			}
			return
		}
	}
	t.Fatalf("no event with the new count: %v", sc.Err())
}

func TestSilencesByOperatorsOnly(t *testing.T) {
	b := setup(t, nil)
	alice, _, _ := b.login(t, "alice", "pw-alice")
	bob, _, _ := b.login(t, "bob", "pw-bob")
	_, page := get(t, bob, b.srv.URL+"/silences")
	form := url.Values{"site": {"example.com"}, "page": {"/blog/**"}, "for": {"2h"}, "comment": {"launch"}}
	form.Set("csrf", csrfOf(t, page))
	resp, err := bob.PostForm(b.srv.URL+"/silences/add", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || len(b.silences.list) != 0 {
		t.Fatalf("viewer silence: %d, %d silences", resp.StatusCode, len(b.silences.list))
	}
	_, page = get(t, alice, b.srv.URL+"/silences")
	form.Set("csrf", csrfOf(t, page))
	resp, err = alice.PostForm(b.srv.URL+"/silences/add", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(b.silences.list) != 1 || b.silences.list[0].Author != "alice" || b.silences.list[0].Match.Page != "/blog/**" {
		t.Fatalf("operator silence: %d, %+v", resp.StatusCode, b.silences.list)
	}
	_, page = get(t, alice, b.srv.URL+"/silences")
	if !strings.Contains(page, `data-testid="silence" data-id="s1"`) || !strings.Contains(page, `data-testid="silence-expire"`) {
		t.Fatalf("silences page:\n%s", page)
	}
	resp, err = alice.PostForm(b.srv.URL+"/silences/expire", url.Values{"id": {"s1"}, "csrf": {csrfOf(t, page)}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || b.silences.list[0].EndsAt.After(time.Date(2026, 11, 24, 12, 0, 30, 0, time.UTC)) {
		t.Errorf("expire: %d, %+v", resp.StatusCode, b.silences.list[0])
	}
}

// 50 browsers following the live view cost one read per interval, not 50.
func TestFiftyLiveStreamsShareOnePoll(t *testing.T) {
	b := setup(t, func(c *Config) { c.Auth, c.LiveInterval = AuthNone, 200*time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const browsers, events = 50, 3
	errs := make(chan error, browsers)
	for i := 0; i < browsers; i++ {
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+"/api/v1/live/stream", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(nil, 1<<20)
			n := 0
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") {
					if n++; n == events {
						errs <- nil
						return
					}
				}
			}
			errs <- fmt.Errorf("stream ended after %d events: %v", n, sc.Err())
		}()
	}
	start := time.Now()
	for i := 0; i < browsers; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.store.mu.Lock()
	calls := b.store.liveCalls
	b.store.mu.Unlock()
	// One read per interval while they were open, give or take the
	// first: far fewer than one per browser and event.
	if most := int(elapsed/(200*time.Millisecond)) + 3; calls > most {
		t.Errorf("%d live reads for %d browsers in %s; want at most %d", calls, browsers, elapsed.Round(time.Millisecond), most)
	}
	t.Logf("%d browsers got %d events each in %s from %d reads", browsers, events, elapsed.Round(time.Millisecond), calls)
}

func TestRulesPageStates(t *testing.T) {
	b := setup(t, nil)
	alice, _, _ := b.login(t, "alice", "pw-alice")
	_, body := get(t, alice, b.srv.URL+"/rules")
	for _, want := range []string{
		`data-testid="rule-page" data-site="example.com" data-path="/pricing" data-state="fired"`,
		`data-testid="rule-page" data-site="example.com" data-path="/&lt;script&gt;alert(1)&lt;/script&gt;" data-state="pending"`,
		">90%<", // /pricing: 90 of pricing's 100
	} {
		if !strings.Contains(body, want) {
			t.Errorf("rules page lacks %s:\n%s", want, body)
		}
	}
}
