package browsertest

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Page is one tab in a browser context of its own: its own cookies, so two
// pages can be two users. A failed step fails the test (t.Fatal); what the
// page did wrong meanwhile (see the package comment) fails it too
// (t.Error), each time a step's answer reports it.
type Page struct {
	t       testing.TB
	b       *Browser
	id      string
	allowed []allowance
	events  []Event
	shots   int
}

type allowance struct {
	kind string // "" for any
	re   *regexp.Regexp
}

// PageOptions are a page's viewport and default step timeout.
type PageOptions struct {
	Width, Height int           // 1280 × 800 unless set
	Timeout       time.Duration // each step's, DefaultTimeout unless set; a navigation gets at least DefaultTimeout
}

// NewPage opens a page in a fresh browser context (UTC, en-GB). It is
// closed when the test ends, after one last look for events.
func (b *Browser) NewPage(t testing.TB) *Page {
	t.Helper()
	return b.NewPageWith(t, PageOptions{})
}

// NewPageWith is NewPage with options.
func (b *Browser) NewPageWith(t testing.TB, o PageOptions) *Page {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	b.mu.Lock()
	b.pages++
	id := fmt.Sprintf("p%d", b.pages)
	b.mu.Unlock()
	p := &Page{t: t, b: b, id: id}
	p.call("newPage", map[string]any{"width": o.Width, "height": o.Height, "timeoutMs": o.Timeout.Milliseconds()}, nil)
	t.Cleanup(func() {
		if b.dead == nil {
			p.call("closePage", nil, nil)
		}
	})
	return p
}

// AllowError lets events whose text (or text, a space and the source,
// the URL a console message names) matches the regular expression pass
// without failing the test, e.g. the console's "status of 403" line for a
// page the test expects to be refused. They are still recorded (Events).
// kind limits it to one kind of event ("console.error", "csp", ...); ""
// matches any.
func (p *Page) AllowError(kind, pattern string) {
	p.allowed = append(p.allowed, allowance{kind: kind, re: regexp.MustCompile(pattern)})
}

// Events is every event the page has reported so far, allowed or not.
func (p *Page) Events() []Event {
	return append([]Event(nil), p.events...)
}

// Dialogs is the text of every dialog (alert, confirm, prompt) the page
// opened; each was dismissed, and each fails the test unless allowed.
func (p *Page) Dialogs() []string {
	var out []string
	for _, e := range p.events {
		if e.Kind == "dialog" {
			out = append(out, e.Text)
		}
	}
	return out
}

// call runs op and decodes its result into out (unless nil); a failed step
// fails the test.
func (p *Page) call(op string, args map[string]any, out any) {
	p.t.Helper()
	if err := p.try(op, args, out); err != nil {
		p.t.Fatalf("browser %s %s: %v", op, describe(args), err)
	}
}

// try is call that returns the step's error instead of failing the test.
func (p *Page) try(op string, args map[string]any, out any) error {
	p.t.Helper()
	within := DefaultTimeout + 20*time.Second
	if ms, ok := args["timeoutMs"].(int64); ok {
		within = time.Duration(ms)*time.Millisecond + 20*time.Second
	}
	a, err := p.b.do(p.id, op, args, within)
	if err != nil {
		p.t.Fatalf("browser %s %s: %v", op, describe(args), err)
	}
	p.record(a.Events)
	if !a.OK {
		return fmt.Errorf("%s", ansi.ReplaceAllString(a.Error, ""))
	}
	if out != nil && len(a.Result) > 0 {
		if err := json.Unmarshal(a.Result, out); err != nil {
			return fmt.Errorf("decode result %s: %w", a.Result, err)
		}
	}
	return nil
}

func (p *Page) record(events []Event) {
	p.t.Helper()
	for _, e := range events {
		p.events = append(p.events, e)
		if p.isAllowed(e) {
			p.t.Logf("browser (allowed) %s", e)
			continue
		}
		p.t.Errorf("browser %s", e)
	}
}

func (p *Page) isAllowed(e Event) bool {
	for _, a := range p.allowed {
		if (a.kind == "" || a.kind == e.Kind) && (a.re.MatchString(e.Text) || a.re.MatchString(e.Text+" "+e.Source)) {
			return true
		}
	}
	return false
}

func describe(args map[string]any) string {
	if args == nil {
		return ""
	}
	for _, k := range []string{"url", "selector", "path", "expr"} {
		if v, ok := args[k].(string); ok {
			if len(v) > 120 {
				v = v[:120] + "…"
			}
			return fmt.Sprintf("%q", v)
		}
	}
	return ""
}

// Goto loads url and returns the HTTP status of its final response (after
// redirects).
func (p *Page) Goto(url string) int {
	p.t.Helper()
	var status int
	p.call("goto", map[string]any{"url": url}, &status)
	return status
}

// ClickNav clicks the first element matching selector and waits for the
// navigation it starts (a link, a form's submission) to load, returning
// the final response's status.
func (p *Page) ClickNav(selector string) int {
	p.t.Helper()
	var status int
	p.call("clickNav", map[string]any{"selector": selector}, &status)
	return status
}

// Click clicks the first element matching selector, waiting for it to be
// visible and enabled.
func (p *Page) Click(selector string) {
	p.t.Helper()
	p.call("click", map[string]any{"selector": selector}, nil)
}

// Fill types value into the first input matching selector.
func (p *Page) Fill(selector, value string) {
	p.t.Helper()
	p.call("fill", map[string]any{"selector": selector, "value": value}, nil)
}

// Text is the rendered text (innerText) of the first element matching
// selector, waiting for one to exist.
func (p *Page) Text(selector string) string {
	p.t.Helper()
	var s string
	p.call("text", map[string]any{"selector": selector}, &s)
	return s
}

// Texts is the rendered text of every element matching selector, now.
func (p *Page) Texts(selector string) []string {
	p.t.Helper()
	var s []string
	p.call("texts", map[string]any{"selector": selector}, &s)
	return s
}

// HTML is the innerHTML of the first element matching selector.
func (p *Page) HTML(selector string) string {
	p.t.Helper()
	var s string
	p.call("html", map[string]any{"selector": selector}, &s)
	return s
}

// Attr is an attribute of the first element matching selector, waiting for
// one to exist; ok is false when the element lacks the attribute.
func (p *Page) Attr(selector, name string) (value string, ok bool) {
	p.t.Helper()
	var v *string
	p.call("attr", map[string]any{"selector": selector, "name": name}, &v)
	if v == nil {
		return "", false
	}
	return *v, true
}

// Count is how many elements match selector now (no waiting).
func (p *Page) Count(selector string) int {
	p.t.Helper()
	var n int
	p.call("count", map[string]any{"selector": selector}, &n)
	return n
}

// Visible reports whether the first element matching selector is visible
// now (no waiting).
func (p *Page) Visible(selector string) bool {
	p.t.Helper()
	var v bool
	p.call("visible", map[string]any{"selector": selector}, &v)
	return v
}

// WaitFor waits up to within for an element matching selector to be
// visible.
func (p *Page) WaitFor(selector string, within time.Duration) {
	p.t.Helper()
	p.call("waitFor", map[string]any{"selector": selector, "timeoutMs": within.Milliseconds()}, nil)
}

// URL is the page's address now.
func (p *Page) URL() string {
	p.t.Helper()
	var s string
	p.call("url", nil, &s)
	return s
}

// Content is the page's whole HTML as the browser holds it now.
func (p *Page) Content() string {
	p.t.Helper()
	var s string
	p.call("content", nil, &s)
	return s
}

// Eval calls the JavaScript function fn (its source, e.g.
// "(sel) => document.querySelectorAll(sel).length") in the page with arg,
// and decodes its JSON-serialisable result into out (unless nil).
func (p *Page) Eval(fn string, arg, out any) {
	p.t.Helper()
	p.call("evaluate", map[string]any{"expr": fn, "arg": arg}, out)
}

// Check asks the driver for the page's events without doing anything, so
// those that happened since the last step fail the test now.
func (p *Page) Check() {
	p.t.Helper()
	p.call("events", nil, nil)
}

// Screenshot saves the whole page as a PNG in the test's artifact
// directory (kept by `go test -artifacts`), logs its path and returns it.
// name becomes part of the file name.
func (p *Page) Screenshot(name string) string {
	p.t.Helper()
	p.shots++
	dir := p.t.ArtifactDir()
	file := filepath.Join(dir, fmt.Sprintf("%02d-%s-%s.png", p.shots, p.id, safeName(name)))
	p.call("screenshot", map[string]any{"path": file, "timeoutMs": screenshotTimeout.Milliseconds()}, nil)
	p.t.Logf("browser screenshot: %s", file)
	return file
}

// screenshotTimeout bounds one screenshot. A tall page on a machine busy
// with other test binaries can take longer than a step's 10 s to paint
// (CI failed once on Try a rule's 418 messages); a screenshot is
// evidence, not an assertion of speed.
const screenshotTimeout = 60 * time.Second

// ansi matches the colour codes in playwright's call logs.
var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func safeName(s string) string {
	return strings.Trim(unsafeChars.ReplaceAllString(s, "-"), "-")
}
