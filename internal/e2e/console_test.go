package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/browsertest"
	"github.com/pagewatch/pagewatch/internal/testserver/smtptest"
)

// The console test's people and the paths a stranger sends.
const (
	consoleOperator, consoleOperatorPassword = "olga", "operator-password-1"
	consoleViewer, consoleViewerPassword     = "victor", "viewer-password-2"

	// hostileScript and hostileImg are request targets as a client sent
	// them; hostileReferrer is a Referer, which pagewatch stores as sent
	// (paths are stored percent-encoded: see pipeline/pageview).
	hostileScript   = `/<script>alert(1)</script>`
	hostileImg      = `/"><img src=x onerror=alert(1)>`
	hostileReferrer = `https://evil.example/"><img src=x onerror=alert(2)><script>alert(3)</script>`
)

// consoleRules: /pricing crosses 40 views in an hour, and each hostile
// page crosses 2. The SMTP server refuses the first two mails for good:
// /pricing's and one hostile page's are dead-lettered.
const consoleRules = `    - {name: pricing-hourly, site: example.com, path: /pricing, threshold: 40, window: 1h, notify: {recipients: [sales@example.com]}}
    - {name: hostile-pages, site: example.com, match: {regex: "/%.*"}, threshold: 2, window: 1h, notify: {recipients: [ops@example.com]}}`

// consoleSection is the console's config: password auth with an operator
// and a viewer, on free ports.
func consoleSection(t *testing.T) string {
	t.Helper()
	hash := func(pw string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		return string(h)
	}
	return fmt.Sprintf(`console:
  listen: "127.0.0.1:0"
  admin_listen: "127.0.0.1:0"
  auth: password
  session_key: "e2e-console-session-key-0123456789abcdef"
  live_interval: 500ms
  users:
    - {name: %s, password_hash: %q, role: operator}
    - {name: %s, password_hash: %q, role: viewer}
`, consoleOperator, hash(consoleOperatorPassword), consoleViewer, hash(consoleViewerPassword))
}

// hostileLines are n views of target, stamped now, from a hostile referrer.
func hostileLines(target string, n int) [][]byte {
	now := time.Now().UTC().Format("02/Jan/2006:15:04:05 +0000")
	// The log escapes a quote in a field as \" (Apache, nginx's escape=default writes \x22).
	esc := strings.NewReplacer(`"`, `\"`)
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, `198.51.100.%d - - [%s] "GET %s HTTP/1.1" 200 512 "%s" "Mozilla/5.0 (X11; Linux x86_64)"`,
			i%250, now, esc.Replace(target), esc.Replace(hostileReferrer))
	}
	return out
}

// consoleAddr is the console's address, read from its log.
func (p *proc) consoleAddr(t *testing.T) string {
	t.Helper()
	re := regexp.MustCompile(`console serving.* addr=(\S+)`)
	var addr string
	testcheck.Eventually(t, 30*time.Second, p.name+" to log its address", func() bool {
		data, err := os.ReadFile(p.out.Name())
		if err != nil {
			t.Fatal(err)
		}
		if m := re.FindSubmatch(data); m != nil {
			addr = string(m[1])
		}
		return addr != ""
	})
	return "http://" + addr
}

// login logs a fresh browser context in as user.
func login(t *testing.T, br *browsertest.Browser, base, user, password string) *browsertest.Page {
	t.Helper()
	p := br.NewPage(t)
	if st := p.Goto(base + "/login"); st != http.StatusOK {
		t.Fatalf("GET /login: status %d", st)
	}
	p.Fill("form#login input[name=user]", user)
	p.Fill("form#login input[name=password]", password)
	if st := p.ClickNav("form#login button[type=submit]"); st != http.StatusOK {
		t.Fatalf("logging in as %s: status %d at %s", user, st, p.URL())
	}
	if u := p.URL(); strings.Contains(u, "/login") {
		t.Fatalf("logging in as %s: still at %s: %s", user, u, p.Text("main"))
	}
	return p
}

// checkNavigation: every page has <main> and the five links.
func checkNavigation(t *testing.T, p *browsertest.Page, page string) {
	t.Helper()
	if n := p.Count("main"); n != 1 {
		t.Errorf("%s: %d <main> elements", page, n)
	}
	for _, nav := range []string{"live", "rules", "history", "dead", "pipeline"} {
		if n := p.Count("a[data-testid=nav-" + nav + "]"); n != 1 {
			t.Errorf("%s: %d nav-%s links", page, n, nav)
		}
	}
}

// injected counts what a hostile value would have added to the document
// had it been written as markup: an <img src=x>, a <script> holding
// alert, an element with an onerror attribute.
const injected = `() => {
  let n = document.querySelectorAll('img[src="x"], [onerror]').length;
  for (const s of document.querySelectorAll('script')) if (s.textContent.includes('alert(')) n++;
  return n;
}`

// checkHostile: no injected element, and each text in wants visible in
// the page's main text.
func checkHostile(t *testing.T, p *browsertest.Page, page string, wants ...string) {
	t.Helper()
	var n int
	p.Eval(injected, nil, &n)
	if n != 0 {
		t.Errorf("%s: %d injected elements from a hostile path or referrer", page, n)
	}
	text := p.Text("main")
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s: %q not shown as text; main says:\n%s", page, w, text)
		}
	}
	if d := p.Dialogs(); len(d) != 0 {
		t.Errorf("%s: dialogs opened: %v", page, d)
	}
}

// rowAttr finds the first element matching sel whose attribute attr is
// exactly value (CSS attribute selectors would need the hostile value
// escaped) and returns its other attribute want and its text.
const rowAttr = `([sel, attr, value, want]) => {
  for (const e of document.querySelectorAll(sel)) if (e.getAttribute(attr) === value) return [e.getAttribute(want) || '', e.innerText];
  return null;
}`

func findRow(p *browsertest.Page, sel, attr, value, want string) (attrValue string, ok bool) {
	var got []string
	p.Eval(rowAttr, []string{sel, attr, value, want}, &got)
	if got == nil {
		return "", false
	}
	return got[0], true
}

// TestConsoleInBrowser drives the console in Chromium against the whole
// pipeline (tail → NATS → load → ClickHouse → sweeper → worker → SMTP):
// no data without a login; an open live view gains rows and numbers by
// server-sent events as lines are appended, never reloading; the history
// shows a crossing with ClickHouse's exact count; a page's chart is drawn;
// a dead letter is refused to a viewer and retried by an operator; and
// hostile paths and referrers show as text on every page, no dialog
// opening and no element injected.
func TestConsoleInBrowser(t *testing.T) {
	began := time.Now()
	b := setupWith(t, setupOptions{rules: consoleRules, load: defaultLoad, worker: defaultWorker,
		smtp: []smtptest.Option{smtptest.WithFailures(550, 2)}})
	cfg, err := os.ReadFile(b.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.config, append(cfg, consoleSection(t)...), 0o644); err != nil {
		t.Fatal(err)
	}
	b.start(t, "ingest", "load")
	b.start(t, "ingest", "tail")
	b.start(t, "sweeper")
	b.start(t, "worker")
	console := b.start(t, "console", "run")
	base := console.consoleAddr(t)
	br := browsertest.Start(t)
	// steps logs how long each part took, to see where a slow run spent it.
	var steps []string
	last := began
	step := func(name string) {
		steps = append(steps, fmt.Sprintf("%s %v", name, time.Since(last).Round(10*time.Millisecond)))
		last = time.Now()
	}
	step("daemons and browser up")

	// The pages carry a strict CSP, so a CSP violation in the browser (which
	// fails the test) would be a page breaking it, and injected markup
	// could not run script.
	resp, err := http.Get(base + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-") {
		t.Errorf("/login: Content-Security-Policy %q", csp)
	}

	// No data without logging in; a wrong password is refused, saying so.
	stranger := br.NewPage(t)
	stranger.AllowError("console.error", `status of 40[14] `)
	if stranger.Goto(base + "/history"); !strings.Contains(stranger.URL(), "/login") || stranger.Count("tr[data-testid=crossing]") != 0 {
		t.Errorf("/history without a login: at %s with %d crossings shown", stranger.URL(), stranger.Count("tr[data-testid=crossing]"))
	}
	stranger.Fill("form#login input[name=user]", consoleOperator)
	stranger.Fill("form#login input[name=password]", "not-the-password")
	stranger.ClickNav("form#login button[type=submit]")
	stranger.WaitFor("[data-testid=login-error]", 5*time.Second)

	step("login checks")

	// The viewer opens the live view before any traffic and keeps it open
	// until the dead letters: every row and number it shows arrives by SSE,
	// drawn by the page's script.
	viewer := login(t, br, base, consoleViewer, consoleViewerPassword)
	viewer.Goto(base + "/live?site=example.com")
	checkNavigation(t, viewer, "/live")
	viewer.Eval(`() => { window.__notReloaded = true; return true }`, nil, nil)
	live := func(path, testid string) string {
		return `[data-testid=live-row][data-path="` + path + `"] [data-testid=` + testid + `]`
	}
	waitLive := func(path string, want int) {
		t.Helper()
		testcheck.Eventually(t, 30*time.Second, fmt.Sprintf("the live view to show %d views of %s in 5 minutes and in the hour", want, path), func() error {
			if viewer.Count(live(path, "views-5m")) == 0 {
				return fmt.Errorf("no row for %s", path)
			}
			m5, h1 := viewer.Text(live(path, "views-5m")), viewer.Text(live(path, "views-1h"))
			if m5 != strconv.Itoa(want) || h1 != strconv.Itoa(want) {
				return fmt.Errorf("it shows %q and %q", m5, h1)
			}
			return nil
		})
	}

	step("viewer at /live")

	// 1. /pricing crosses 40; its one mail is refused (550): dead-lettered.
	appendLines(t, b.log, freshLines(45))
	b.waitHits(t, 45, 60*time.Second)
	waitLive("/pricing", 45)
	b.waitOutcome(t, "dead_lettered", 1, 60*time.Second)

	step("pricing crossed and dead-lettered")

	// 2. The hostile pages cross; one's mail is refused, the other's goes out.
	appendLines(t, b.log, hostileLines(hostileScript, 3))
	appendLines(t, b.log, hostileLines(hostileImg, 3))
	b.waitHits(t, 51, 60*time.Second)
	stored := strings.Fields(b.ch.Query(t, "SELECT DISTINCT path FROM pagewatch.hits WHERE path != '/pricing' ORDER BY path"))
	if len(stored) != 2 {
		t.Fatalf("hostile paths stored: %q", stored)
	}
	t.Logf("hostile paths as stored: %q", stored)
	for _, path := range stored {
		waitLive(path, 3)
	}
	checkHostile(t, viewer, "/live (rows added by SSE)", stored...)

	step("hostile pages live")

	// 3. A live number changes in place: 7 more views of /pricing. How
	// long after ClickHouse holds them the page shows them is logged.
	appendLines(t, b.log, freshLines(7))
	var loaded, shown time.Time
	testcheck.Eventually(t, 30*time.Second, "ClickHouse to hold 58 hits and the live view to show 52 views of /pricing", func() error {
		if loaded.IsZero() && b.hitCount(t) == 58 {
			loaded = time.Now()
		}
		if shown.IsZero() && viewer.Text(live("/pricing", "views-5m")) == "52" {
			shown = time.Now()
		}
		if loaded.IsZero() || shown.IsZero() {
			return fmt.Errorf("loaded at %v, shown at %v", loaded, shown)
		}
		return nil
	})
	waitLive("/pricing", 52)
	t.Logf("live view: 52 shown %v after ClickHouse held the 7 new hits (live_interval 500ms; negative: shown before the test saw them loaded)", shown.Sub(loaded).Round(10*time.Millisecond))
	var same bool
	viewer.Eval(`() => window.__notReloaded === true`, nil, &same)
	if !same {
		t.Errorf("/live: the page was reloaded rather than updated in place")
	}
	checkHostile(t, viewer, "/live", stored...)
	viewer.Screenshot("live")
	b.waitOutcome(t, "dead_lettered", 2, 60*time.Second)
	b.waitOutcome(t, "sent", 1, 60*time.Second)

	step("live change")

	op := login(t, br, base, consoleOperator, consoleOperatorPassword)
	checkNavigation(t, op, "/ (after login)")
	if n := op.Count("[data-testid=live-row]"); n != 3 {
		t.Errorf("/: %d live rows, want 3 (/pricing and the two hostile pages)", n)
	}

	step("operator login")
	c := &consoleCheck{t: t, b: b, base: base, op: op, viewer: viewer, stored: stored}

	c.checkHistory()
	step("history")

	c.checkPageViews()
	step("page views")

	c.checkOtherPages()
	step("rules, pipeline, silences")

	c.checkDeadLetters()
	op.Check()
	step("dead letters")
	t.Logf("console in the browser (Chromium %s): test took %v: %s", br.Version(), time.Since(began).Round(time.Millisecond), strings.Join(steps, ", "))
}

// consoleCheck is what the checks of the console's pages share.
type consoleCheck struct {
	t          *testing.T
	b          *bundle
	base       string // the console's URL
	op, viewer *browsertest.Page
	stored     []string // the hostile paths as ClickHouse holds them
}

// checkHistory: the crossing with the count ClickHouse holds, and the
// hostile pages' crossings as text.
func (c *consoleCheck) checkHistory() {
	t, b, base, op, stored := c.t, c.b, c.base, c.op, c.stored
	op.Goto(base + "/history")
	checkNavigation(t, op, "/history")
	want := strings.TrimSpace(b.ch.Query(t, "SELECT hits FROM pagewatch.crossings FINAL WHERE rule = 'pricing-hourly'"))
	value, ok := findRow(op, "tr[data-testid=crossing]", "data-rule", "pricing-hourly", "data-path")
	if !ok {
		t.Fatalf("/history: no crossing row of pricing-hourly:\n%s", op.Text("main"))
	}
	if value != "/pricing" {
		t.Errorf("/history: pricing-hourly row's data-path %q", value)
	}
	count := op.Text("tr[data-testid=crossing][data-rule=pricing-hourly] td[data-testid=count]")
	countValue, _ := op.Attr("tr[data-testid=crossing][data-rule=pricing-hourly] td[data-testid=count]", "data-value")
	if strings.TrimSpace(count) != want || countValue != want {
		t.Errorf("/history: pricing-hourly count %q (data-value %q), ClickHouse holds %s", count, countValue, want)
	}
	for _, path := range stored {
		if _, ok := findRow(op, "tr[data-testid=crossing]", "data-path", path, "data-rule"); !ok {
			t.Errorf("/history: no crossing row with data-path %q", path)
		}
	}
	checkHostile(t, op, "/history", stored...)
	op.Screenshot("history")
}

// checkPageViews: /pricing's chart drawn; each hostile page's view shows
// its path (heading, chart title) and its hostile referrer as text.
func (c *consoleCheck) checkPageViews() {
	t, b, base, op, stored := c.t, c.b, c.base, c.op, c.stored
	op.Goto(base + "/page?" + url.Values{"site": {"example.com"}, "path": {"/pricing"}}.Encode())
	checkNavigation(t, op, "/page")
	op.WaitFor("svg[data-testid=chart]", 10*time.Second)
	var series []string
	op.Eval(`() => [...document.querySelectorAll('svg[data-testid=chart] .series')].map(e => e.getAttribute('d') || e.getAttribute('points') || '')`, nil, &series)
	if len(series) == 0 || strings.TrimSpace(series[0]) == "" {
		t.Errorf("/page: chart series %q: nothing drawn", series)
	}
	// The crossing is marked on the chart and named in its legend.
	if marks := op.Count("svg[data-testid=chart] .crossing-rule"); marks != 1 {
		t.Errorf("/page: %d crossings marked on the chart, want 1", marks)
	}
	if legend := op.Text("li[data-testid=chart-mark]"); !strings.Contains(legend, "pricing-hourly crossed at ") || !strings.Contains(legend, " views in 1h") {
		t.Errorf("/page: the chart's legend names the crossing as %q", legend)
	}
	op.Screenshot("page-pricing")
	// A hostile page's view: its path in the heading and the chart's
	// title, its hostile referrer in the referrers, all as text.
	referrer := strings.TrimSuffix(b.ch.Query(t, "SELECT any(referer) FROM pagewatch.hits WHERE path != '/pricing' FORMAT TabSeparatedRaw"), "\n")
	for i, path := range stored {
		op.Goto(base + "/page?" + url.Values{"site": {"example.com"}, "path": {path}}.Encode())
		op.WaitFor("svg[data-testid=chart]", 10*time.Second)
		checkHostile(t, op, "/page "+path, path, referrer)
		var title string
		op.Eval(`() => { const t = document.querySelector('svg[data-testid=chart] title'); return t ? t.textContent : '' }`, nil, &title)
		if !strings.Contains(title, path) {
			t.Errorf("/page %s: the chart's title %q lacks the path", path, title)
		}
		if got := op.Texts("[data-testid=referrer] td:first-child"); len(got) != 1 || got[0] != referrer {
			t.Errorf("/page %s: referrers %q, want [%q]", path, got, referrer)
		}
		op.Screenshot("page-hostile-" + strconv.Itoa(i))
	}
}

// checkOtherPages: the rules, with the hostile pages nearest their
// threshold as text; the pipeline and the silences load without an error.
func (c *consoleCheck) checkOtherPages() {
	t, base, op, stored := c.t, c.base, c.op, c.stored
	op.Goto(base + "/rules")
	checkNavigation(t, op, "/rules")
	for _, path := range stored {
		if _, ok := findRow(op, "[data-testid=rule][data-rule=hostile-pages] [data-testid=rule-page]", "data-path", path, "data-state"); !ok {
			t.Errorf("/rules: hostile-pages lacks the page %q", path)
		}
	}
	checkHostile(t, op, "/rules", stored...)
	op.Screenshot("rules")
	for _, page := range []string{"/pipeline", "/silences"} {
		if st := op.Goto(base + page); st != http.StatusOK {
			t.Errorf("%s: status %d", page, st)
		}
		checkNavigation(t, op, page)
	}
}

// checkDeadLetters: a viewer's retry and discard are refused (403); the
// operator discards the hostile page's dead letter and retries /pricing's,
// which is then sent, and the history records both actions.
func (c *consoleCheck) checkDeadLetters() {
	t, b, base, op, viewer, stored := c.t, c.b, c.base, c.op, c.viewer, c.stored
	pricingDead := `[data-testid=dead-letter][data-key^="pricing-hourly."]`
	hostileDead := `[data-testid=dead-letter][data-key^="hostile-pages."]`
	viewer.AllowError("console.error", `status of 403`)
	viewer.Goto(base + "/dead")
	checkNavigation(t, viewer, "/dead (viewer)")
	if n, p, h := viewer.Count("[data-testid=dead-letter]"), viewer.Count(pricingDead), viewer.Count(hostileDead); n != 2 || p != 1 || h != 1 {
		t.Fatalf("/dead: %d dead letters (%d of pricing-hourly, %d of hostile-pages), want 2 (1, 1):\n%s", n, p, h, viewer.Text("main"))
	}
	hostileKey, _ := viewer.Attr(hostileDead, "data-key")
	hostilePath := strings.TrimSpace(b.ch.Query(t, fmt.Sprintf("SELECT path FROM pagewatch.crossings FINAL WHERE crossing_key = '%s' FORMAT TabSeparatedRaw", hostileKey)))
	checkHostile(t, viewer, "/dead", hostilePath)
	if st := viewer.ClickNav(pricingDead + " form[data-testid=retry] button"); st != http.StatusForbidden {
		t.Errorf("/dead: a viewer's retry answered %d, want 403", st)
	}
	viewer.WaitFor("[data-testid=forbidden]", 5*time.Second)
	viewer.Screenshot("dead-viewer-forbidden")
	viewer.Goto(base + "/dead")
	if st := viewer.ClickNav(hostileDead + " form[data-testid=discard] button"); st != http.StatusForbidden {
		t.Errorf("/dead: a viewer's discard answered %d, want 403", st)
	}

	op.Goto(base + "/dead")
	if n := op.Count("[data-testid=dead-letter]"); n != 2 {
		t.Fatalf("/dead: %d dead letters after the viewer's attempts, want 2", n)
	}
	if n := op.Count("form[data-testid=retry-all]"); n != 1 {
		t.Errorf("/dead: %d retry-all forms", n)
	}
	op.Screenshot("dead-operator")
	if st := op.ClickNav(hostileDead + " form[data-testid=discard] button"); st != http.StatusOK {
		t.Errorf("/dead: the operator's discard ended with status %d", st)
	}
	op.Goto(base + "/dead")
	if st := op.ClickNav(pricingDead + " form[data-testid=retry] button"); st != http.StatusOK {
		t.Errorf("/dead: the operator's retry ended with status %d", st)
	}
	op.Goto(base + "/dead")
	if n := op.Count("[data-testid=dead-letter]"); n != 0 {
		t.Errorf("/dead: %d dead letters after the discard and the retry:\n%s", n, op.Text("main"))
	}
	b.waitOutcome(t, "sent", 2, 30*time.Second) // the retried one; the discarded one is not sent
	op.Goto(base + "/history")
	for _, action := range []string{"retry", "discard"} {
		sel := "tr[data-testid=action][data-action=" + action + "]"
		if n := op.Count(sel); n != 1 {
			t.Errorf("/history: %d %s actions recorded, want 1:\n%s", n, action, op.Text("main"))
		} else if row := op.Text(sel); !strings.Contains(row, consoleOperator) {
			t.Errorf("/history: the %s action does not name %s: %q", action, consoleOperator, row)
		}
	}
	if n := op.Count("tr[data-testid=crossing][data-rule=pricing-hourly] [data-testid=outcome][data-outcome=sent]"); n != 1 {
		t.Errorf("/history: pricing-hourly shows %d sent outcomes after the retry, want 1", n)
	}
	checkHostile(t, op, "/history (with the actions)", stored...)
	op.Screenshot("history-after-retry")
}
