package console

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/internal/testserver/browsertest"
)

// The cookies as a browser takes them: with cookie_secure on, Secure and
// __Host- cookies over plain HTTP from http://localhost and
// http://127.0.0.1 (browsers count both as secure, which the compose
// setup relies on); a change's message shown once; a logout that holds.
func TestSecureCookiesInBrowser(t *testing.T) {
	on := true
	b := setup(t, func(c *Config) { c.CookieSecure = &on })
	br := browsertest.Start(t)
	for _, base := range []string{b.srv.URL, strings.Replace(b.srv.URL, "127.0.0.1", "localhost", 1)} {
		p := br.NewPage(t)
		if st := p.Goto(base + "/login"); st != http.StatusOK {
			t.Fatalf("%s/login: %d", base, st)
		}
		p.Fill("form#login input[name=user]", "alice")
		p.Fill("form#login input[name=password]", "pw-alice")
		p.ClickNav("form#login button[type=submit]")
		if u := p.URL(); strings.Contains(u, "/login") {
			t.Fatalf("%s: still at %s after logging in: the browser refused the session cookie", base, u)
		}
		p.Goto(base + "/dead")
		seq := b.dead.letters[0].Seq
		p.ClickNav(`tr[data-seq="` + strconv.FormatUint(seq, 10) + `"] form[data-testid=retry] button`)
		if got := p.Text(`[data-testid=flash]`); !strings.HasPrefix(got, "retry: dead letter "+strconv.FormatUint(seq, 10)) {
			t.Errorf("%s: message after the retry %q", base, got)
		}
		if p.Goto(base + "/dead"); p.Count(`[data-testid=flash]`) != 0 {
			t.Errorf("%s: the message shows again", base)
		}
		p.ClickNav("form.logout button")
		if p.Goto(base + "/history"); !strings.Contains(p.URL(), "/login") {
			t.Errorf("%s: /history after logout at %s", base, p.URL())
		}
	}
}
