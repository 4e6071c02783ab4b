package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/testserver/browsertest"
)

// Trying a rule in Chromium, over a real ClickHouse: from the rules
// page's link, a spike rule pasted and tried shows its would-be fire,
// escalation and resolve on /post's chart and in the table; a rule with
// a mistake is refused with the key named, and the text kept to fix.
func TestTryRuleInBrowser(t *testing.T) {
	br := browsertest.Start(t)
	b := startTry(t, "pw_try_browser")
	h := time.Now().UTC().Truncate(time.Hour).Add(-48 * time.Hour)
	b.surgeHistory(t, h)
	b.addHits(t, `/"><img src=x onerror=alert(1)>`, 3, h.Add(20*time.Minute))

	p := br.NewPage(t)
	if st := p.Goto(b.base + "/rules"); st != http.StatusOK {
		t.Fatalf("GET /rules: %d", st)
	}
	if st := p.ClickNav("[data-testid=try-rule]"); st != http.StatusOK || !strings.HasSuffix(p.URL(), "/rules/try") {
		t.Fatalf("Try a rule: %d at %s", st, p.URL())
	}
	p.Fill("[data-testid=try-yaml]", surgeRule)
	if st := p.ClickNav("[data-testid=try-submit]"); st != http.StatusOK {
		t.Fatalf("try: %d\n%s", st, p.Content())
	}
	if got := p.Text("[data-testid=try-total]"); got != "3" {
		t.Errorf("would-be messages %q, want 3", got)
	}
	chartSel := `[data-testid=try-chart][data-path="/post"]`
	for _, ev := range []string{"fire", "escalate", "resolve"} {
		if n := p.Count(chartSel + ` [data-testid=chart-episode][data-event=` + ev + `]`); n != 1 {
			t.Errorf("/post's chart: %d %s marks, want 1", n, ev)
		}
	}
	if got := p.Texts("[data-testid=try-message] td:nth-child(4)"); strings.Join(got, ",") != "fire,escalate,resolve" {
		t.Errorf("messages' events %q", got)
	}
	if got := p.Text("[data-testid=try-message] [data-testid=try-subject]"); !strings.HasPrefix(got, "[pagewatch] /post ") {
		t.Errorf("first subject %q", got)
	}
	p.Screenshot("try-rule")

	// A mistake: refused, its key named, the rule kept in the form.
	bad := strings.Replace(surgeRule, "factor: 4", "factor: 0.5", 1)
	p.Fill("[data-testid=try-yaml]", bad)
	p.AllowError("console.error", `status of 422`)
	if st := p.ClickNav("[data-testid=try-submit]"); st != http.StatusUnprocessableEntity {
		t.Errorf("bad rule: %d", st)
	}
	if got := p.Text("[data-testid=try-error-key]"); got != "sweeper.rules[0].spike.factor" {
		t.Errorf("error names %q, want sweeper.rules[0].spike.factor", got)
	}
	if got := p.Text("[data-testid=try-error]"); !strings.Contains(got, "(line 5)") || !strings.Contains(got, "above 1") {
		t.Errorf("error %q", got)
	}
	if p.Count("[data-testid=try-result]") != 0 {
		t.Error("a refused rule shows a result")
	}
	var kept string
	p.Eval(`() => document.querySelector('[data-testid=try-yaml]').value`, nil, &kept)
	if kept != bad {
		t.Errorf("the form holds %q, want the rule as posted", kept)
	}
	p.Screenshot("try-rule-refused")
}
