package browsertest_test

import (
	"bytes"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/testserver/browsertest"
)

// csp is as strict as the console's: scripts and styles from the page's own
// origin only, nothing inline.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'"

// site is a tiny site with a login form, a script that sets a text, and
// pages that break the rules a test should catch.
func site(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	page := func(w http.ResponseWriter, status int, body string) {
		w.Header().Set("Content-Security-Policy", csp)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		fmt.Fprintf(w, "<!doctype html><html><head><title>t</title><link rel=icon href=data:,><script src=/app.js defer></script></head><body><main>%s</main></body></html>", body)
	}
	mux.HandleFunc("GET /app.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `document.addEventListener('DOMContentLoaded', () => {
  const n = document.querySelector('#js'); if (n) n.textContent = 'ran';
  if (document.querySelector('#alert')) alert('hi');
});`)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		page(w, http.StatusOK, `<p id=js>not run</p><form id=login method=post action=/login>
<input name=user><button type=submit>Log in</button></form>`)
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/hello?user="+r.FormValue("user"), http.StatusSeeOther)
	})
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		page(w, http.StatusOK, `<p id=hello>hello `+html.EscapeString(r.FormValue("user"))+`</p>`)
	})
	mux.HandleFunc("GET /inline", func(w http.ResponseWriter, r *http.Request) {
		page(w, http.StatusOK, `<p>inline</p><script>document.title = 'x'</script>`)
	})
	mux.HandleFunc("GET /alert", func(w http.ResponseWriter, r *http.Request) {
		page(w, http.StatusOK, `<p id=alert>alert</p>`)
	})
	mux.HandleFunc("GET /forbidden", func(w http.ResponseWriter, r *http.Request) {
		page(w, http.StatusForbidden, `<p data-testid=forbidden>no</p>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// recorder stands in for the test where a page should report an error, so
// the self-test can see the error instead of failing.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
	// passing: no failure is expected now, and what fails fails the test
	// itself (a Goexit of the test's own goroutine would end it as a
	// panic, hiding the step that failed). expect and pass bracket the
	// step that should fail.
	passing bool
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.passing {
		r.TB.Errorf(format, args...)
		return
	}
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// Fatalf records and ends the goroutine, as t.Fatalf does: steps that
// should fail run in a goroutine of their own.
func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	passing := r.passing
	r.mu.Unlock()
	if passing {
		r.TB.Fatalf(format, args...)
	}
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) expect() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.passing = false
}

func (r *recorder) pass() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.passing = true
}

func (r *recorder) errors() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errs, "\n")
}

// TestBrowser launches Chromium with browsertest.Flags (headless, no
// sandbox, no network) once, for the subtests.
func TestBrowser(t *testing.T) {
	srv := site(t)
	b := browsertest.Start(t)
	t.Run("steps", func(t *testing.T) { testSteps(t, b, srv.URL) })
	t.Run("problems", func(t *testing.T) { testProblems(t, b, srv.URL) })
	t.Run("step fails", func(t *testing.T) { testStepFails(t, b, srv.URL) })
}

// testSteps drives a form, a redirect, a script, a screenshot and an
// evaluation, on a page with a strict CSP and no errors.
func testSteps(t *testing.T, b *browsertest.Browser, base string) {
	p := b.NewPage(t)

	if got := p.Goto(base + "/"); got != http.StatusOK {
		t.Fatalf("GET / status %d", got)
	}
	if got := p.Text("#js"); got != "ran" {
		t.Errorf("#js = %q: the page's own script did not run", got)
	}
	p.Fill("form#login input[name=user]", `<b>"o'brien"</b>`)
	if got := p.ClickNav("form#login button[type=submit]"); got != http.StatusOK {
		t.Errorf("after the 303, status %d", got)
	}
	if got, want := p.Text("#hello"), `hello <b>"o'brien"</b>`; got != want {
		t.Errorf("#hello = %q, want %q", got, want)
	}
	if n := p.Count("#hello b"); n != 0 {
		t.Errorf("%d <b> elements: the name was not escaped", n)
	}
	if n := p.Count("form#login"); n != 0 {
		t.Errorf("form#login still there after navigating")
	}
	if v, ok := p.Attr("#hello", "id"); !ok || v != "hello" {
		t.Errorf(`#hello's id = %q, %v`, v, ok)
	}
	if _, ok := p.Attr("#hello", "data-missing"); ok {
		t.Errorf("#hello has data-missing")
	}
	var n int
	p.Eval(`(sel) => document.querySelectorAll(sel).length`, "main p", &n)
	if n != 1 {
		t.Errorf("%d main p, want 1", n)
	}
	shot := p.Screenshot("hello")
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) || len(data) < 1000 {
		t.Errorf("screenshot %s: %d bytes, not a PNG", shot, len(data))
	}
	if ev := p.Events(); len(ev) != 0 {
		t.Errorf("events on a clean page: %v", ev)
	}
}

// testProblems: an inline script under the CSP, an alert and a refused
// page each reach the test as an error, unless allowed.
func testProblems(t *testing.T, b *browsertest.Browser, base string) {

	cases := []struct {
		path string
		kind string // an event of this kind is reported
		want string // in the error
	}{
		{"/inline", "csp", "script-src"},
		{"/alert", "dialog", `alert dialog: "hi"`},
		{"/forbidden", "console.error", "403"},
	}
	for _, c := range cases {
		t.Run(strings.TrimPrefix(c.path, "/"), func(t *testing.T) {
			rec := &recorder{TB: t}
			p := b.NewPage(rec)
			p.Goto(base + c.path)
			// The page reports a CSP violation as a DOM event dispatched
			// after the console's error: it may come a moment later.
			for deadline := time.Now().Add(5 * time.Second); ; {
				p.Check()
				if slices.ContainsFunc(p.Events(), func(e browsertest.Event) bool { return e.Kind == c.kind }) || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if errs := rec.errors(); !strings.Contains(errs, c.want) {
				t.Errorf("errors reported: %q; want one containing %q", errs, c.want)
			}
			var kinds []string
			for _, e := range p.Events() {
				kinds = append(kinds, e.Kind)
			}
			if !strings.Contains(strings.Join(kinds, " "), c.kind) {
				t.Errorf("events %v: none of kind %s", p.Events(), c.kind)
			}
			if got := len(p.Dialogs()); (c.kind == "dialog") != (got == 1) {
				t.Errorf("%d dialogs", got)
			}

			// Allowed beforehand, the same page fails nothing.
			rec2 := &recorder{TB: t}
			p2 := b.NewPage(rec2)
			p2.AllowError("", ".")
			p2.Goto(base + c.path)
			p2.Check()
			if errs := rec2.errors(); errs != "" {
				t.Errorf("allowed, still reported: %s", errs)
			}
		})
	}
}

// testStepFails: a step that cannot complete fails the test within the
// page's timeout, saying which step and selector, and the browser goes on
// serving the next step.
func testStepFails(t *testing.T, b *browsertest.Browser, base string) {
	rec := &recorder{TB: t, passing: true}
	p := b.NewPageWith(rec, browsertest.PageOptions{Timeout: 500 * time.Millisecond})
	p.Goto(base + "/")
	rec.expect()
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Text("#missing")
		t.Error("Text of a missing element returned")
	}()
	<-done
	if errs := rec.errors(); !strings.Contains(errs, `browser text "#missing"`) || !strings.Contains(errs, "500ms") {
		t.Errorf("error for a missing element: %q", errs)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the failing step took %v", d)
	}
	// The same page serves the next step. Its 500 ms default is the
	// failing step's; a loaded machine may take longer to answer this one.
	rec.pass()
	p.WaitFor("#js", 20*time.Second)
	if got := p.Text("#js"); got != "ran" {
		t.Errorf("after the failed step, #js = %q", got)
	}
}
