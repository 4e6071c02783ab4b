package mail_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/internal/testserver/smtptest"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

// withContext adds an hour of per-minute hits (with gaps) and referrers.
func withContext(n notify.Notification) notify.Notification {
	n.WindowEnd = n.CrossedAt.Truncate(time.Minute).Add(time.Minute)
	n.WindowStart = n.WindowEnd.Add(-time.Hour)
	for i := 0; i < 60; i += 2 {
		n.Series = append(n.Series, traffic.MinuteHits{Minute: n.WindowStart.Add(time.Duration(i) * time.Minute), Hits: uint64(i)})
	}
	n.Referrers = []traffic.Referrer{{Referer: "https://news.example/item?id=1", Hits: 700}, {Referer: "https://search.example/", Hits: 300}}
	return n
}

// sendToFile renders n through the file transport and parses the .eml.
func sendToFile(t *testing.T, n notify.Notification) parsed {
	t.Helper()
	dir := t.TempDir()
	s := newSender(t, fileConfig(dir))
	if err := s.Send(context.Background(), n); err != nil {
		t.Fatalf("Send: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, mail.FileName(n.Key)))
	if err != nil {
		t.Fatal(err)
	}
	return parseMessage(t, data)
}

var imgSrcRE = regexp.MustCompile(`<img src="cid:([^"]+)"`)

// checkChart checks that p carries one inline PNG chart referenced from
// the HTML by its Content-ID.
func checkChart(t *testing.T, p parsed) {
	t.Helper()
	if want := "multipart/related(multipart/alternative(text/plain,text/html),image/png)"; p.Structure != want {
		t.Errorf("MIME structure %s, want %s", p.Structure, want)
	}
	if len(p.Images) != 1 {
		t.Fatalf("%d images, want 1", len(p.Images))
	}
	img := p.Images[0]
	cfg, err := png.DecodeConfig(bytes.NewReader(img.Data))
	if err != nil {
		t.Fatalf("chart is not a PNG: %v", err)
	}
	if _, err := png.Decode(bytes.NewReader(img.Data)); err != nil || cfg.Width != 600 || cfg.Height != 200 {
		t.Errorf("chart %dx%d, decode err %v; want 600x200", cfg.Width, cfg.Height, err)
	}
	if !strings.HasPrefix(img.Header.Get("Content-Disposition"), "inline") {
		t.Errorf("chart Content-Disposition %q, want inline", img.Header.Get("Content-Disposition"))
	}
	m := imgSrcRE.FindAllStringSubmatch(p.HTML, -1)
	if len(m) != 1 {
		t.Fatalf("HTML has %d cid images, want 1:\n%s", len(m), p.HTML)
	}
	if got, want := img.Header.Get("Content-Id"), "<"+m[0][1]+">"; got != want {
		t.Errorf("chart Content-ID %q, HTML refers to %q", got, want)
	}
	if !strings.Contains(p.Text, "chart.png") {
		t.Errorf("text part does not say where the chart is:\n%s", p.Text)
	}
}

func TestMessageWithChartAndReferrers(t *testing.T) {
	n := withContext(testNotification())
	p := sendToFile(t, n)
	checkChart(t, p)
	for name, body := range map[string]string{"text": p.Text, "html": p.HTML} {
		for _, want := range []string{"Top referrers", "https://news.example/item?id=1", "700", "Views per minute",
			"2025-03-04 03:07 – 04:07 UTC", "busiest minute"} {
			if !strings.Contains(strings.ToLower(body), strings.ToLower(want)) {
				t.Errorf("%s part lacks %q:\n%s", name, want, body)
			}
		}
	}
	if strings.Index(p.Text, "news.example") > strings.Index(p.Text, "search.example") {
		t.Errorf("referrers not most first:\n%s", p.Text)
	}
	// The same crossing renders the same chart under the same Content-ID,
	// like its Message-ID.
	again := sendToFile(t, n)
	if !bytes.Equal(again.Images[0].Data, p.Images[0].Data) || again.Images[0].Header.Get("Content-Id") != p.Images[0].Header.Get("Content-Id") {
		t.Error("a second render of the same crossing differs")
	}
}

func TestMessageWithoutSeriesHasNoChart(t *testing.T) {
	n := testNotification()
	n.Referrers = []traffic.Referrer{{Referer: "https://search.example/", Hits: 3}}
	n.Series = []traffic.MinuteHits{}
	p := sendToFile(t, n)
	if p.Structure != "multipart/alternative(text/plain,text/html)" || len(p.Images) != 0 {
		t.Errorf("structure %s with %d images, want no chart", p.Structure, len(p.Images))
	}
	if strings.Contains(p.HTML, "<img") || strings.Contains(p.HTML, "cid:") || strings.Contains(p.Text, "chart") {
		t.Errorf("chart mentioned without a chart:\n%s\n%s", p.Text, p.HTML)
	}
	if !strings.Contains(p.HTML, "https://search.example/") {
		t.Error("referrers missing without a chart")
	}

	// Without any context the message is as before.
	p = sendToFile(t, testNotification())
	if strings.Contains(p.Text, "referrers") || strings.Contains(p.HTML, "referrers") || len(p.Images) != 0 {
		t.Errorf("empty context shows up:\n%s", p.Text)
	}
}

func TestHostileReferrers(t *testing.T) {
	n := withContext(testNotification())
	huge := strings.Repeat("https://evil.example/"+strings.Repeat("A", 100), 1000) // ~120 KB
	n.Referrers = []traffic.Referrer{
		{Referer: "https://x.example/\r\nBcc: evil@example.com\r\nX-Injected: yes", Hits: 90},
		{Referer: `"><script>alert(1)</script><a href="https://phish.example/">login</a>`, Hits: 80},
		{Referer: "<SCRIPT SRC=//evil.example/x.js></SCRIPT>", Hits: 70},
		{Referer: huge, Hits: 60},
		{Referer: "bad\xff\xfe\xc3utf8\x00\x1b[31m\u202eevil\u2028", Hits: 50},
		{Referer: "javascript:alert(document.cookie)", Hits: 40},
		{Referer: "", Hits: 30},
	}
	for i := range 8 { // beyond the ten shown
		n.Referrers = append(n.Referrers, traffic.Referrer{Referer: fmt.Sprintf("https://tail%d.example/", i), Hits: uint64(10 - i)})
	}
	p := sendToFile(t, n)
	checkChart(t, p)

	for _, line := range strings.Split(p.HeaderBlock, "\r\n") {
		name, _, _ := strings.Cut(line, ":")
		if strings.EqualFold(name, "Bcc") || strings.EqualFold(name, "X-Injected") {
			t.Errorf("injected header line %q", line)
		}
	}
	if len(p.Header["Bcc"]) != 0 || len(p.Header["X-Injected"]) != 0 {
		t.Errorf("injected headers parsed: %v", p.Header)
	}

	html := strings.ToLower(p.HTML)
	// Escaped text may still read "href"; markup would need a raw < or ".
	for _, bad := range []string{"<script", "<a ", `href="`, "href='", "<img src=\"http"} {
		if strings.Contains(html, bad) {
			t.Errorf("HTML part contains %q", bad)
		}
	}
	if !strings.Contains(p.HTML, "&lt;script&gt;") || !strings.Contains(p.HTML, "&lt;SCRIPT") {
		t.Error("escaped <script> missing from the HTML part")
	}
	if got := strings.Count(p.HTML, "<img"); got != 1 {
		t.Errorf("%d <img> tags, want only the chart's", got)
	}

	for name, body := range map[string]string{"text": p.Text, "html": p.HTML} {
		if !utf8.ValidString(body) {
			t.Errorf("%s part is not valid UTF-8", name)
		}
		if strings.ContainsAny(body, "\x00\x1b\u202e\u2028") {
			t.Errorf("%s part carries control characters", name)
		}
		if strings.Contains(body, "\nBcc:") || strings.Contains(body, "\nX-Injected") {
			t.Errorf("%s part has input-forged lines", name)
		}
		if len(body) > 20000 {
			t.Errorf("%s part is %d bytes; input was not shortened", name, len(body))
		}
		if strings.Contains(body, "tail3.example") || !strings.Contains(body, "tail2.example") {
			t.Errorf("%s part does not show exactly the top ten referrers", name)
		}
	}
	cut := 0
	for _, line := range strings.Split(p.Text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if n := utf8.RuneCountInString(line); n > 220 {
			t.Errorf("text line of %d runes: %.80q…", n, line)
		}
		if strings.Contains(line, "evil.example/AAAA") {
			cut++
			if !strings.HasSuffix(line, "…") {
				t.Errorf("long referrer not cut with an ellipsis: %.80q…", line)
			}
		}
	}
	if cut != 1 {
		t.Errorf("long referrer on %d text lines, want 1", cut)
	}
	codes := regexp.MustCompile(`<code>([^<]*)</code>`).FindAllStringSubmatch(p.HTML, -1)
	if len(codes) != 10 {
		t.Errorf("%d referrers in HTML, want 10", len(codes))
	}
	for _, code := range codes {
		if n := utf8.RuneCountInString(code[1]); n > 200*6 { // each rune escaped to at most &#NN;
			t.Errorf("HTML referrer of %d runes", n)
		}
		if strings.Contains(code[1], "AAAA") && utf8.RuneCountInString(code[1]) != 200 {
			t.Errorf("long referrer shown as %d runes in HTML, want 200", utf8.RuneCountInString(code[1]))
		}
	}
}

// TestSMTPMessageWithChart sends the chart through a real SMTP server: the
// related part survives DATA and arrives decodable.
func TestSMTPMessageWithChart(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithTLS(), smtptest.WithAuth("user", "pass"))
	s := newSender(t, smtpConfig(srv))
	if err := s.Send(context.Background(), withContext(testNotification())); err != nil {
		t.Fatalf("Send: %v", err)
	}
	p := parseMessage(t, srv.WaitForMessages(t, 1, wait)[0].Data)
	checkChart(t, p)
	img, _ := png.Decode(bytes.NewReader(p.Images[0].Data))
	if img == nil || img.Bounds() != image.Rect(0, 0, 600, 200) {
		t.Error("chart did not survive SMTP")
	}
}

// A site's "no data" message says when its gap began and what its
// tailers said of its logs, not a page's views, threshold and normal,
// which it has none of.
func TestNoDataMessageSaysTheGapAndTheLogs(t *testing.T) {
	at := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	n := notify.Notification{Key: "_nodata.unusual.example_com.1", Rule: "unusual", Site: "example.com", Event: "fire",
		Recipients: []string{"ops@example.com"}, CrossedAt: at.Add(80 * time.Minute),
		Why: &crossing.Why{Kind: crossing.KindNoData, Since: at, Feeds: &crossing.Feeds{Logs: 1,
			Silent: []string{"web-2 on <b>host</b>, last heard 03:01 UTC"}}}}
	p := sendToFile(t, n)
	for _, want := range []string{"example.com sent no data since 03:00 UTC, 6 Dec", "Gap began:  2026-12-06 03:00 UTC",
		"Logs:       not heard from: web-2 on <b>host</b>, last heard 03:01 UTC"} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("text part lacks %q:\n%s", want, p.Text)
		}
	}
	if !strings.Contains(p.HTML, "not heard from: web-2 on &lt;b&gt;host&lt;/b&gt;") {
		t.Errorf("HTML part lacks the escaped logs line:\n%s", p.HTML)
	}
	for _, unwanted := range []string{"Views:", "Threshold:", "Normal", "Window:"} {
		if strings.Contains(p.Text, unwanted) {
			t.Errorf("text part says %q, which a site's gap has none of:\n%s", unwanted, p.Text)
		}
	}
}
