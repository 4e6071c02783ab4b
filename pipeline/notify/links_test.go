package notify_test

import (
	"bytes"
	"html"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/links"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/pipeline/silence"
)

// mailParts returns a message's headers and its decoded text and HTML
// bodies.
func mailParts(t *testing.T, data []byte) (mail.Header, string, string) {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var text, html string
	var walk func(ct string, body io.Reader)
	walk = func(ct string, body io.Reader) {
		mt, params, _ := mime.ParseMediaType(ct)
		if strings.HasPrefix(mt, "multipart/") {
			r := multipart.NewReader(body, params["boundary"])
			for {
				p, err := r.NextPart() // decodes quoted-printable
				if err != nil {
					return
				}
				walk(p.Header.Get("Content-Type"), p)
			}
		}
		b, _ := io.ReadAll(body)
		switch mt {
		case "text/plain":
			text = string(b)
		case "text/html":
			html = string(b)
		}
	}
	walk(m.Header.Get("Content-Type"), m.Body)
	return m.Header, text, html
}

func post(t *testing.T, u, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(u, "application/x-www-form-urlencoded", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func linkSetup(t *testing.T) (*bundle, *links.Signer, *links.Unsubscribes, *silence.Store) {
	b := setup(t)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	b.cfg.Links.BaseURL = srv.URL + "/pw"
	b.cfg.Links.Secret = secret.New("0123456789abcdef0123456789abcdef")
	signer := links.NewSigner(b.cfg.Links)
	unsubs, err := links.OpenUnsubscribes(t.Context(), b.bus)
	if err != nil {
		t.Fatal(err)
	}
	silences, err := silence.Open(t.Context(), b.bus, b.logger)
	if err != nil {
		t.Fatal(err)
	}
	api := &links.API{Signer: signer, Unsubscribes: unsubs, Silences: silences, Logger: b.logger}
	mux.Handle("/pw/", http.StripPrefix("/pw", api.Handler()))
	return b, signer, unsubs, silences
}

// Each recipient gets a copy with their own List-Unsubscribe; the
// one-click POST alone (List-Unsubscribe=One-Click, nothing else)
// unsubscribes them from the rule, and the next crossing of that rule is
// mailed to the others only, the skipped recipient recorded.
func TestOneClickUnsubscribe(t *testing.T) {
	b, _, unsubs, _ := linkSetup(t)
	b.start(t, 1)
	x := job(0)
	x.Recipients = []string{"ann@example.com", "bob@example.com"}
	b.publish(t, x, x.Key)
	msgs := b.smtp.WaitForMessages(t, 2, 15*time.Second)
	var annLink string
	for _, m := range msgs {
		if len(m.To) != 1 {
			t.Fatalf("a copy to %v: want one recipient per copy", m.To)
		}
		h, text, html := mailParts(t, m.Data)
		lu := h.Get("List-Unsubscribe")
		if !strings.HasPrefix(lu, "<http") || !strings.HasSuffix(lu, ">") {
			t.Fatalf("List-Unsubscribe: %q", lu)
		}
		if got := h.Get("List-Unsubscribe-Post"); got != "List-Unsubscribe=One-Click" {
			t.Fatalf("List-Unsubscribe-Post: %q", got)
		}
		link := strings.Trim(lu, "<>")
		if !strings.Contains(text, link) || !strings.Contains(html, strings.ReplaceAll(link, "&", "&amp;")) {
			t.Errorf("bodies lack the unsubscribe link %s:\n%s", link, text)
		}
		if !strings.Contains(text, "/pw/links/snooze?t=") || !strings.Contains(html, "/pw/links/snooze?t=") {
			t.Errorf("bodies lack a snooze link:\n%s", text)
		}
		if m.To[0] == "ann@example.com" {
			annLink = link
		}
	}
	// A GET (a mail scanner) shows the form and changes nothing.
	resp, err := http.Get(annLink)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), `<form method="post" action="unsubscribe?t=`) {
		t.Fatalf("GET: %d %s", resp.StatusCode, page)
	}
	if has, _ := unsubs.Has(t.Context(), "rule", "ann@example.com"); has {
		t.Fatal("a GET unsubscribed")
	}
	if code, body := post(t, annLink, "List-Unsubscribe=One-Click"); code != 200 {
		t.Fatalf("one-click POST: %d %s", code, body)
	}
	if has, _ := unsubs.Has(t.Context(), "rule", "ANN@example.com"); !has {
		t.Fatal("not unsubscribed after the POST")
	}

	y := job(1)
	y.Recipients = x.Recipients
	b.publish(t, y, y.Key)
	msgs = b.smtp.WaitForMessages(t, 3, 15*time.Second)
	if to := msgs[2].To; len(to) != 1 || to[0] != "bob@example.com" {
		t.Fatalf("third mail went to %v, want bob only", to)
	}
	testcheck.Eventually(t, 10*time.Second, "the skip in the history", func() bool {
		return strings.Contains(b.outcomes(t), "unsubscribed\t1")
	})
	// A crossing of that rule for ann alone is not sent at all.
	z := job(2)
	z.Recipients = []string{"ann@example.com"}
	b.publish(t, z, z.Key)
	testcheck.Eventually(t, 10*time.Second, "the second skip in the history", func() bool {
		return strings.Contains(b.outcomes(t), "unsubscribed\t2")
	})
	if n := len(b.smtp.Messages()); n != 3 {
		t.Fatalf("%d mails, want 3", n)
	}
}

// An expired token is refused (410), a forged one too (403), and neither
// unsubscribes.
func TestExpiredOrForgedLinkRefused(t *testing.T) {
	b, signer, unsubs, _ := linkSetup(t)
	base := strings.TrimSuffix(b.cfg.Links.BaseURL, "/")
	expired := signer.Sign(links.Claims{Action: links.ActionUnsubscribe, Recipient: "ann@example.com", Rule: "rule", Expires: time.Now().Add(-time.Minute).Unix()})
	if code, body := post(t, base+"/links/unsubscribe?t="+expired, "List-Unsubscribe=One-Click"); code != http.StatusGone {
		t.Fatalf("expired: %d %s", code, body)
	}
	good := signer.Sign(links.Claims{Action: links.ActionUnsubscribe, Recipient: "ann@example.com", Rule: "rule", Expires: time.Now().Add(time.Hour).Unix()})
	payload, sig, _ := strings.Cut(good, ".")
	// Another recipient under the same signature.
	other := signer.Sign(links.Claims{Action: links.ActionUnsubscribe, Recipient: "bob@example.com", Rule: "rule", Expires: time.Now().Add(time.Hour).Unix()})
	otherPayload, _, _ := strings.Cut(other, ".")
	wrongKey := links.NewSigner(links.Config{BaseURL: base, Secret: secret.New(strings.Repeat("x", 32)), TTL: time.Hour, SnoozeFor: time.Hour})
	for name, tok := range map[string]string{
		"swapped payload": otherPayload + "." + sig,
		"cut signature":   payload + "." + sig[:10],
		"no signature":    payload,
		"other key":       wrongKey.Sign(links.Claims{Action: links.ActionUnsubscribe, Recipient: "ann@example.com", Rule: "rule", Expires: time.Now().Add(time.Hour).Unix()}),
		"snooze as unsub": signer.Sign(links.Claims{Action: links.ActionSnooze, Recipient: "ann@example.com", Rule: "rule", Site: "s", Path: "/p", Expires: time.Now().Add(time.Hour).Unix()}),
		"empty":           "",
	} {
		if code, body := post(t, base+"/links/unsubscribe?t="+url.QueryEscape(tok), "List-Unsubscribe=One-Click"); code != http.StatusForbidden {
			t.Errorf("%s: %d %s", name, code, body)
		}
	}
	for _, r := range []string{"ann@example.com", "bob@example.com"} {
		if has, _ := unsubs.Has(t.Context(), "rule", r); has {
			t.Fatalf("%s unsubscribed by a refused link", r)
		}
	}
}

// The snooze link silences the page (only it) for snooze_for; its
// confirmation page escapes the hostile path. A * in the path is the
// path's own: a snooze of "/*******", made up by a visitor, once
// silenced every page of 7 characters (its * read as ?).
func TestSnoozeLinkSilencesThePage(t *testing.T) {
	b, signer, _, silences := linkSetup(t)
	now := time.Now()
	x := job(0)
	x.Path = "/a*<script>alert(1)</script>"
	links := signer.For(x, []string{"ann@example.com"}, now)
	snooze := links["ann@example.com"].Snooze
	resp, err := http.Get(snooze)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Contains(string(page), "<script>") || !strings.Contains(string(page), "&lt;script&gt;") {
		t.Fatalf("GET: %d %s", resp.StatusCode, page)
	}
	// Submit the page's form, as a browser would.
	_, rest, _ := strings.Cut(string(page), `<form method="post" action="`)
	action, _, _ := strings.Cut(rest, `"`)
	base, _ := url.Parse(snooze)
	ref, err := url.Parse(html.UnescapeString(action))
	if err != nil || action == "" {
		t.Fatalf("form action %q: %v", action, err)
	}
	if code, body := post(t, base.ResolveReference(ref).String(), ""); code != 200 {
		t.Fatalf("POST to the form's action %s: %d %s", action, code, body)
	}
	ss, err := silences.List(t.Context())
	if err != nil || len(ss) != 1 {
		t.Fatalf("silences: %v %v", ss, err)
	}
	s := ss[0]
	if d := s.EndsAt.Sub(s.StartsAt); d != 24*time.Hour || s.Author != "ann@example.com" || s.Match.Site != x.Site {
		t.Fatalf("silence %+v", s)
	}
	other, near := x, x
	other.Path = "/a*<script>alert(2)</script>"
	near.Path = "/ab<script>alert(1)</script>" // the page's * is no wildcard
	if !s.Match.Matches(x) || s.Match.Matches(other) || s.Match.Matches(near) || s.Match.Matches(job(1)) {
		t.Fatalf("silence %+v matches the wrong pages", s.Match)
	}
	// The worker honours it.
	b.start(t, 1)
	b.publish(t, x, x.Key)
	testcheck.Eventually(t, 10*time.Second, "the silenced crossing in the history", func() bool {
		return strings.Contains(b.outcomes(t), string(crossing.Silenced)+"\t1")
	})
}

// A snooze link used again, by its recipient or by anyone the mail was
// forwarded to, adds nothing: one silence per link, of the mail's rule
// only. Links past the per-caller burst are slowed with 429.
func TestSnoozeLinkReplayedAddsOneSilenceOfItsRule(t *testing.T) {
	_, signer, _, silences := linkSetup(t)
	x := job(0)
	snooze := signer.For(x, []string{"ann@example.com"}, time.Now())["ann@example.com"].Snooze
	for i := 0; i < 5; i++ {
		if code, body := post(t, snooze, ""); code != 200 {
			t.Fatalf("POST %d: %d %s", i, code, body)
		}
	}
	ss, err := silences.List(t.Context())
	if err != nil || len(ss) != 1 {
		t.Fatalf("%d silences after five uses of one link, want 1: %v", len(ss), err)
	}
	otherRule := x
	otherRule.Rule = "another-rule"
	if s := ss[0]; s.Match.Rule != x.Rule || !s.Match.Matches(x) || s.Match.Matches(otherRule) {
		t.Fatalf("silence %+v: want it to match rule %s only", s.Match, x.Rule)
	}
	limited := 0
	for i := 0; i < 40; i++ {
		if code, _ := post(t, snooze, ""); code == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("40 more requests from one address at once: none slowed")
	}
}

// Made-up links are slowed per caller address, a real link per link: 40
// junk requests from one address (behind a proxy, every caller's) leave
// a real one-click unsubscribe from that address working.
func TestJunkLinksDoNotUseUpARealLinksLimit(t *testing.T) {
	b, signer, unsubs, _ := linkSetup(t)
	base := strings.TrimSuffix(b.cfg.Links.BaseURL, "/")
	limited := 0
	for i := range 40 {
		if code, _ := post(t, base+"/links/unsubscribe?t=junk"+strconv.Itoa(i), "List-Unsubscribe=One-Click"); code == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("40 junk links from one address: none slowed")
	}
	x := job(0)
	unsub := signer.For(x, []string{"ann@example.com"}, time.Now())["ann@example.com"].Unsubscribe
	if code, body := post(t, unsub, "List-Unsubscribe=One-Click"); code != http.StatusOK {
		t.Fatalf("a real link after the junk: %d %s", code, body)
	}
	if has, _ := unsubs.Has(t.Context(), x.Rule, "ann@example.com"); !has {
		t.Fatal("ann not unsubscribed")
	}
}

// A token has one spelling: the last character of its signature carries
// 2 bits no byte uses, and the 3 other letters that differ only there
// are refused (each was a snooze of its own, a silence the recipient
// could add again after an operator expired theirs).
func TestLinkSignatureHasOneSpelling(t *testing.T) {
	_, signer, _, silences := linkSetup(t)
	x := job(0)
	snooze := signer.For(x, []string{"ann@example.com"}, time.Now())["ann@example.com"].Snooze
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, snooze[len(snooze)-1])
	for v := last &^ 3; v < last&^3+4; v++ {
		code, body := post(t, snooze[:len(snooze)-1]+alphabet[v:v+1], "")
		if v == last && code != http.StatusOK || v != last && code != http.StatusForbidden {
			t.Errorf("signature ending %q: %d %s", alphabet[v], code, body)
		}
	}
	// Nor do line breaks, which the decoder skips, make it another.
	i := strings.Index(snooze, "t=") + 2
	for _, tok := range []string{snooze[:i+5] + "%0A" + snooze[i+5:], snooze[:i+5] + "%0D" + snooze[i+5:], snooze + "%0A"} {
		if code, body := post(t, tok, ""); code != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 403", tok[i-2:i+12], code, body)
		}
	}
	if ss, err := silences.List(t.Context()); err != nil || len(ss) != 1 {
		t.Fatalf("%d silences, want 1: %v", len(ss), err)
	}
}

func TestLinksConfigNamesItsKeys(t *testing.T) {
	c := links.DefaultConfig()
	if err := c.Validate("worker.links"); err != nil || c.Enabled() {
		t.Fatalf("defaults: %v, enabled %t", err, c.Enabled())
	}
	c.BaseURL = "ftp://x"
	c.Secret = secret.New("short")
	c.TTL = 0
	err := c.Validate("worker.links")
	for _, want := range []string{"worker.links.base_url", "worker.links.secret: at least 32", "worker.links.ttl"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to name %s", err, want)
		}
	}
	c = links.DefaultConfig()
	c.BaseURL = "https://pw.example"
	if err := c.Validate("worker.links"); err == nil || !strings.Contains(err.Error(), "worker.links.secret: must be set") {
		t.Errorf("base_url alone: %v", err)
	}
}

// A quiet-hours digest honours unsubscribes too: the address that left a
// rule gets a digest without that rule's crossings; the other gets all.
func TestQuietDigestLeavesOutUnsubscribedRules(t *testing.T) {
	b := setup(t)
	unsubs, err := links.OpenUnsubscribes(t.Context(), b.bus)
	if err != nil {
		t.Fatal(err)
	}
	if err := unsubs.Add(t.Context(), "rule", "ann@example.com", time.Now()); err != nil {
		t.Fatal(err)
	}
	var now atomic.Int64
	now.Store(time.Date(2026, 6, 1, 2, 0, 0, 0, time.UTC).UnixNano()) // inside 01:00–04:00 UTC
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	night := &captureReceiver{}
	specs := []notify.ReceiverSpec{{Name: "night", Kind: notify.KindEmail,
		Open:  func() (notify.Receiver, error) { return night, nil },
		Quiet: notify.QuietHours{Start: "01:00", End: "04:00", TimeZone: "UTC"}}}
	cfg := b.cfg
	cfg.Routing = notify.Routing{Receivers: []string{"night"}}
	for i, rule := range []string{"rule", "other", "other"} {
		x := job(i)
		x.Rule, x.Recipients = rule, []string{"ann@example.com", "bob@example.com"}
		b.publish(t, x, x.Key)
	}
	b.runWorker(t, cfg, specs, clock)
	testcheck.Eventually(t, 10*time.Second, "three held crossings", func() bool {
		return b.chSrv.Query(t, "SELECT count() FROM pagewatch.notifications WHERE outcome = 'held'") == "3\n"
	})
	now.Store(time.Date(2026, 6, 1, 4, 0, 0, 0, time.UTC).UnixNano())
	testcheck.Eventually(t, 10*time.Second, "two digests", func() bool { return len(night.all()) == 2 })
	time.Sleep(1500 * time.Millisecond) // a third?
	got := night.all()
	if len(got) != 2 {
		t.Fatalf("%d digests", len(got))
	}
	for _, d := range got {
		switch strings.Join(d.Recipients, ",") {
		case "bob@example.com":
			if len(d.Digest) != 3 {
				t.Errorf("bob's digest has %d crossings, want 3", len(d.Digest))
			}
		case "ann@example.com":
			if len(d.Digest) != 2 || d.Rule != "other" || got[0].Key == got[1].Key {
				t.Errorf("ann's digest: %d crossings of %s, key %s", len(d.Digest), d.Rule, d.Key)
			}
		default:
			t.Errorf("a digest to %v", d.Recipients)
		}
	}
}
