package deploy_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/internal/testserver/browsertest"
)

// The demo's console (auth none on loopback) and its story's pages.
const (
	demoConsole = "http://127.0.0.1:19105"
	demoSite    = "demo.example"
	surgePage   = "/blog/sqlite-at-scale"
	quietPage   = "/docs/install"
	newPage     = "/blog/launch-week"
)

// triedRule is pasted into Try a rule: the surge page alone, judged
// more keenly than the shipped rule (sensitivity 3, not 5).
const triedRule = `name: try-surge
site: demo.example
match: {exact: /blog/sqlite-at-scale}
window: 1h
unusual: {sensitivity: 3}
escalate: [4]
notify_on: [fire, escalate, resolve]
notify: {recipients: [you@example.com]}
`

// markRE reads a fire's legend line, "unusual fired at TIME: N views in
// 1h, usual A–B": the hour's views and usual range, and, for a fire on a
// burst of minutes, the burst's; a new page's says so after them.
var markRE = regexp.MustCompile(`^unusual fired at [0-9: -]+: ([0-9,]+) views in 1h, usual ([0-9,]+)–([0-9,]+)(?:; a burst of ([0-9,]+) in [0-9]+ min, usual [0-9,]+–([0-9,]+))?(?:, a new page [a-z0-9 ,'()]+)?$`)

func num(s string) int {
	n, _ := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	return n
}

func pageURL(path, rng string) string {
	return demoConsole + "/page?" + url.Values{"site": {demoSite}, "path": {path}, "range": {rng}}.Encode()
}

// lookAtConsole checks, in Chromium, the demo's console after its story,
// a screenshot of each (kept by go test -artifacts): the surge page's
// band and episode marks, the quiet and the new page's crossings, the
// pipeline's tailed file, and Try a rule. With
// PAGEWATCH_UPDATE_SCREENSHOTS=1 the surge page's screenshot becomes
// docs/console-page.png (the README's picture).
func lookAtConsole(t *testing.T, br *browsertest.Browser, root string) {
	t.Helper()
	p := br.NewPageWith(t, browsertest.PageOptions{Width: 1280, Height: 900})
	marks := func() []string {
		var events []string
		p.Eval(`() => [...document.querySelectorAll('svg[data-testid=chart] [data-testid=chart-episode]')].map(e => e.dataset.event)`, nil, &events)
		return events
	}

	// The surge page: the band, the fire, escalation and resolve. Over
	// 6 hours of the demo clock (2.4 minutes of the wall's) if the fire
	// is still in them, else 24.
	rng := "6h"
	for _, r := range []string{"6h", "24h"} {
		rng = r
		if st := p.Goto(pageURL(surgePage, r)); st != http.StatusOK {
			t.Fatalf("GET %s's page: %d", surgePage, st)
		}
		if ev := marks(); len(ev) > 0 && ev[0] == "fire" {
			break
		}
	}
	t.Logf("%s's page over %s", surgePage, rng)
	if d, _ := p.Attr("svg[data-testid=chart] [data-testid=chart-band]", "d"); !strings.HasPrefix(d, "M") || strings.Count(d, "L") < 50 {
		t.Errorf("%s: band %.60q: not drawn", surgePage, d)
	}
	if got := p.Text("[data-testid=chart-band-legend]"); !strings.Contains(got, "unusual: the page's usual range") {
		t.Errorf("%s: band legend %q", surgePage, got)
	}
	if ev := marks(); strings.Join(ev, " ") != "fire escalate resolve" {
		t.Errorf("%s: episode marks %q, want fire escalate resolve", surgePage, ev)
	}
	var labels []string
	p.Eval(`() => [...document.querySelectorAll('svg[data-testid=chart] [data-testid=chart-episode-label]')].map(e => e.textContent)`, nil, &labels)
	if strings.Join(labels, ",") != "fire,escalate ×4,resolve" {
		t.Errorf("%s: marks labelled %q, want fire, escalate ×4, resolve", surgePage, labels)
	}
	legend := p.Texts("[data-testid=chart-mark]")
	if len(legend) != 3 || !markRE.MatchString(legend[0]) || !strings.HasPrefix(legend[1], "unusual escalated at ") ||
		!strings.HasPrefix(legend[2], "unusual resolved at ") || !strings.Contains(legend[2], ", peak ") {
		t.Errorf("%s: episodes in the legend %q", surgePage, legend)
	}
	if refs := strings.Join(p.Texts("[data-testid=referrer] td.path"), " "); !strings.Contains(refs, "news.ycombinator.com") {
		t.Errorf("%s: referrers %q, want news.ycombinator.com among them", surgePage, refs)
	}
	p.Screenshot("surge-page")
	// The same over 7 days, an hour a point: the band's weekly rhythm
	// shows, and the episode on it. The README's picture.
	if st := p.Goto(pageURL(surgePage, "7d")); st != http.StatusOK {
		t.Fatalf("GET %s's page: %d", surgePage, st)
	}
	if d, _ := p.Attr("svg[data-testid=chart] [data-testid=chart-band]", "d"); !strings.HasPrefix(d, "M") || strings.Count(d, "L") < 100 {
		t.Errorf("%s over 7d: band %.60q: not drawn over the week", surgePage, d)
	}
	if ev := marks(); strings.Join(ev, " ") != "fire escalate resolve" {
		t.Errorf("%s over 7d: episode marks %q, want fire escalate resolve", surgePage, ev)
	}
	shot := p.Screenshot("surge-page-7d")
	if os.Getenv("PAGEWATCH_UPDATE_SCREENSHOTS") == "1" {
		b, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "docs", "console-page.png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("PAGEWATCH_UPDATE_SCREENSHOTS=1: wrote docs/console-page.png")
	}

	// The quiet page: fired on views far under its usual range; the new
	// page: fired on views far over its (near nothing) usual range.
	for _, c := range []struct {
		path, what string
		ok         func(n, lo, hi int) bool
	}{
		{quietPage, "went quiet", func(n, lo, _ int) bool { return n < lo }},
		{newPage, "took off", func(n, _, hi int) bool { return n > hi }}, // or its burst's, below
	} {
		if st := p.Goto(pageURL(c.path, "24h")); st != http.StatusOK {
			t.Fatalf("GET %s's page: %d", c.path, st)
		}
		if ev := marks(); len(ev) == 0 || ev[0] != "fire" {
			t.Errorf("%s (%s): episode marks %q, want a fire first", c.path, c.what, ev)
		}
		legend := p.Texts("[data-testid=chart-mark]")
		m := []string{}
		if len(legend) > 0 {
			m = markRE.FindStringSubmatch(legend[0])
		}
		burst := len(m) == 6 && m[4] != "" && num(m[4]) > num(m[5]) // fired on its minutes, far past theirs
		if len(m) != 6 || !(c.ok(num(m[1]), num(m[2]), num(m[3])) || (c.what == "took off" && burst)) {
			t.Errorf("%s (%s): legend %q", c.path, c.what, legend)
		} else {
			t.Logf("%s (%s): %s", c.path, c.what, legend[0])
		}
		p.Screenshot(strings.ReplaceAll(c.what, " ", "-") + "-page")
	}

	// The pipeline: the tailed file by its path, its bytes behind.
	if st := p.Goto(demoConsole + "/pipeline"); st != http.StatusOK {
		t.Fatalf("GET /pipeline: %d", st)
	}
	log := filepath.Join(root, ".demo", "access.log")
	paths, behinds := p.Texts(`[data-testid=tailed] td.path`), p.Texts(`[data-testid=tailed] [data-testid=behind]`)
	found := false
	for i := range min(len(paths), len(behinds)) {
		if paths[i] != log {
			continue
		}
		found = true
		if !regexp.MustCompile(`^[0-9,]+ B\b`).MatchString(behinds[i]) {
			t.Errorf("/pipeline: %s is %q behind, want bytes", log, behinds[i])
		}
		var level string
		p.Eval(`(path) => [...document.querySelectorAll('[data-testid=tailed]')].find(r => r.querySelector('td.path')?.textContent === path)?.dataset.level ?? ''`, log, &level)
		t.Logf("/pipeline: %s, %s behind (level %s)", log, behinds[i], level)
	}
	if !found {
		t.Errorf("/pipeline: tailed files %q, want %s", paths, log)
	}
	p.Screenshot("pipeline")

	// The rules page, then Try a rule: the surge page judged more
	// keenly, its would-be fires marked on its chart; then a mistake,
	// refused with its key named.
	if st := p.Goto(demoConsole + "/rules"); st != http.StatusOK {
		t.Fatalf("GET /rules: %d", st)
	}
	if n := p.Count(`[data-testid=rule][data-rule=unusual]`); n != 1 {
		t.Errorf("/rules: %d rules named unusual, want the shipped one", n)
	}
	p.Screenshot("rules")
	if st := p.ClickNav("[data-testid=try-rule]"); st != http.StatusOK || !strings.HasSuffix(p.URL(), "/rules/try") {
		t.Fatalf("Try a rule: %d at %s", st, p.URL())
	}
	p.Fill("[data-testid=try-yaml]", triedRule)
	if st := p.ClickNav("[data-testid=try-submit]"); st != http.StatusOK {
		t.Fatalf("try: %d\n%s", st, p.Content())
	}
	chart := `[data-testid=try-chart][data-path="` + surgePage + `"]`
	if n := p.Count(chart); n != 1 {
		t.Errorf("Try a rule: %d charts of %s, want 1", n, surgePage)
	}
	if n := p.Count(chart + ` [data-testid=chart-episode][data-event=fire]`); n < 1 {
		t.Errorf("Try a rule: no would-be fire marked on %s's chart", surgePage)
	}
	t.Logf("Try a rule: would have sent %s messages", p.Text("[data-testid=try-total]"))
	// The surge page's own messages only: its site's data flowed all
	// along, so no "no data" between the page's views (418 of them
	// once, when a try judged its site's freshness by the page's rows).
	for _, subj := range p.Texts("[data-testid=try-subject]") {
		if !strings.HasPrefix(subj, "[pagewatch] "+surgePage+" ") {
			t.Errorf("Try a rule: a message %q, want only %s's", subj, surgePage)
			break
		}
	}
	p.Screenshot("try-rule")

	bad := strings.Replace(triedRule, "sensitivity: 3", "sensitivity: -1", 1)
	p.Fill("[data-testid=try-yaml]", bad)
	p.AllowError("console.error", `status of 422`)
	if st := p.ClickNav("[data-testid=try-submit]"); st != http.StatusUnprocessableEntity {
		t.Errorf("a rule with a mistake: %d, want 422", st)
	}
	if got := p.Text("[data-testid=try-error-key]"); got != "sweeper.rules[0].unusual.sensitivity" {
		t.Errorf("the mistake named %q, want sweeper.rules[0].unusual.sensitivity", got)
	}
	if p.Count("[data-testid=try-result]") != 0 {
		t.Error("a refused rule shows a result")
	}
	p.Screenshot("try-rule-refused")
}
