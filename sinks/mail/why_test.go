package mail_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pagewatch/pagewatch/domain/crossing"
)

// A spike's why is in both parts: the normal and ratio, the rank, the
// referrer domains with their shares then and before, the new ones, and
// the busiest minute (the chart's caption says it when there is a chart).
func TestMessageShowsWhy(t *testing.T) {
	n := testNotification()
	at := time.Date(2025, 3, 4, 10, 42, 0, 0, time.UTC)
	n.Why = &crossing.Why{Kind: "spike", Count: 400, Baseline: 20, Factor: 4, Ratio: 20, Direction: "up",
		Since: at.Add(-time.Hour), Rank: 2, RankOf: 1234, BusiestMinute: at, BusiestHits: 70,
		Referrers: []crossing.ReferrerShare{
			{Domain: "news.example", Hits: 300, Share: 0.75, BaselineShare: 0},
			{Domain: "search.example", Hits: 100, Share: 0.25, BaselineShare: 0.9},
		},
		NewReferrers: []string{"news.example"}}
	p := sendToFile(t, n)
	for name, body := range map[string]string{"text": p.Text, "html": p.HTML} {
		for _, want := range []string{"20 views in a normal window", "20.0 × normal", "fires at 4 × normal",
			"2nd of 1,234 pages", "2025-03-04 10:42 UTC, 70 views", "news.example", "75%", "90%", "(new)"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s part lacks %q:\n%s", name, want, body)
			}
		}
	}
}

// A fire on a burst of minutes says them beside the hour's normal: the
// hour's count may sit inside its own usual range.
func TestMessageShowsTheBurstItFiredOn(t *testing.T) {
	n := testNotification()
	n.Why = &crossing.Why{Kind: "unusual", Count: 94, Baseline: 10, Low: 2, High: 22.4, Days: 28, Weekly: true, Ratio: 9.4, Direction: "up",
		Burst: 10 * time.Minute, BurstCount: 80, BurstBaseline: 1.67, BurstHigh: 7.6}
	p := sendToFile(t, n)
	for name, body := range map[string]string{"text": p.Text, "html": p.HTML} {
		for _, want := range []string{"expected 2–23 views, from 4 weeks of history (same weekday)", "Fired on burst", "80 views in 10 minutes, expected 0–8 (now 47.9×)"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s part lacks %q:\n%s", name, want, body)
			}
		}
	}
	if !strings.Contains(p.Text, "\n  Fired on burst: 80 views") {
		t.Errorf("text part's burst line is not aligned with the why's others:\n%s", p.Text)
	}
}

// A drop heard on its hours together says them, aligned as a burst is.
func TestMessageShowsTheHoursADropFiredOn(t *testing.T) {
	n := testNotification()
	n.Why = &crossing.Why{Kind: "unusual", Count: 4, Baseline: 23, Low: 11, High: 39, Days: 28, Weekly: true, Direction: "down",
		Burst: 3 * time.Hour, BurstCount: 15, BurstBaseline: 70, BurstLow: 43.2, BurstHigh: 102.5}
	p := sendToFile(t, n)
	for name, body := range map[string]string{"text": p.Text, "html": p.HTML} {
		for _, want := range []string{"expected 11–39 views, from 4 weeks of history (same weekday)", "Fired on hours", "15 views in 3 hours, expected 43–103 (now 0.2×)"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s part lacks %q:\n%s", name, want, body)
			}
		}
	}
	if !strings.Contains(p.Text, "\n  Fired on hours: 15 views") {
		t.Errorf("text part's hours line is not aligned with the why's others:\n%s", p.Text)
	}
}

// Referrer domains are hostile input: markup is escaped in the HTML part,
// CR/LF and control characters never start a line or a header, and a
// domain of 100 KB is cut.
func TestWhyWithHostileReferrerDomains(t *testing.T) {
	n := testNotification()
	hostile := []string{
		"<script>alert(1)</script>",
		"x.example\r\nBcc: evil@example.com\r\nX-Injected: yes",
		`"><a href="https://phish.example/">login</a>`,
		strings.Repeat("A", 100000),
		"bad\xff\x00\x1b[31m\u202eevil\u2028",
	}
	n.Why = &crossing.Why{Kind: "threshold", Count: 101, Baseline: 100, NewReferrers: hostile}
	for _, d := range hostile {
		n.Why.Referrers = append(n.Why.Referrers, crossing.ReferrerShare{Domain: d, Hits: 10, Share: 0.2})
	}
	p := sendToFile(t, n)
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
	for _, bad := range []string{"<script", "<a ", `href="https://phish`} {
		if strings.Contains(html, bad) {
			t.Errorf("HTML part contains %q", bad)
		}
	}
	if !strings.Contains(p.HTML, "&lt;script&gt;") {
		t.Error("escaped <script> missing from the HTML part")
	}
	for name, body := range map[string]string{"text": p.Text, "html": p.HTML} {
		if !utf8.ValidString(body) || strings.ContainsAny(body, "\x00\x1b\u202e\u2028") {
			t.Errorf("%s part carries invalid UTF-8 or control characters", name)
		}
		if strings.Contains(body, "\nBcc:") || strings.Contains(body, "\nX-Injected") {
			t.Errorf("%s part has input-forged lines", name)
		}
		if len(body) > 30000 {
			t.Errorf("%s part is %d bytes; the long domain was not cut", name, len(body))
		}
		if !strings.Contains(body, "Bcc: evil@example.com") {
			t.Errorf("%s part does not show the CRLF domain on one line", name)
		}
	}
}

// A spike's mail says so in its subject and first sentence, naming the
// referrer that sent most of it; that domain is hostile input like the
// others, and its CR/LF never splits the Subject header.
func TestSpikeSubjectNamesTheReferrer(t *testing.T) {
	n := testNotification()
	n.Why = &crossing.Why{Kind: "spike", Count: 400, Baseline: 20, Factor: 4, Ratio: 20, Direction: "up",
		Referrers: []crossing.ReferrerShare{{Domain: "news.example\r\nBcc: evil@example.com", Hits: 300, Share: 0.75}}}
	p := sendToFile(t, n)
	subject := p.Subject
	if !strings.Contains(subject, "is at 20.0× its normal") || !strings.Contains(subject, "mostly from news.example") {
		t.Errorf("subject %q", subject)
	}
	if len(p.Header["Bcc"]) != 0 {
		t.Errorf("injected Bcc: %v", p.Header["Bcc"])
	}
	for name, body := range map[string]string{"text": p.Text, "html": p.HTML} {
		if !strings.Contains(body, "is at 20.0× its normal") {
			t.Errorf("%s part lacks the spike's sentence:\n%s", name, body)
		}
	}
}

// "Back to normal" is worded as such, with the episode's peak and total,
// not as another threshold passed.
func TestResolveSaysBackToNormal(t *testing.T) {
	n := testNotification()
	n.Event = "resolve"
	n.Why = &crossing.Why{Kind: "spike", Count: 30, Baseline: 20, Peak: 1400, Total: 5200}
	p := sendToFile(t, n)
	want := "is back to normal after peaking at 1,400 views in 1h (5,200 views in all)"
	if subject := p.Subject; !strings.Contains(subject, want) || strings.Contains(subject, "passed") {
		t.Errorf("subject %q", subject)
	}
	for name, body := range map[string]string{"text": p.Text, "html": p.HTML} {
		if !strings.Contains(body, want) {
			t.Errorf("%s part lacks %q:\n%s", name, want, body)
		}
	}
}

// However long the path and the referrer domain, the subject stays short
// enough for a mail client to show what happened.
func TestSpikeSubjectIsBounded(t *testing.T) {
	n := testNotification()
	n.Path = "/" + strings.Repeat("p", 5000)
	n.Why = &crossing.Why{Kind: "spike", Count: 400, Baseline: 20, Ratio: 20, Direction: "up",
		Referrers: []crossing.ReferrerShare{{Domain: strings.Repeat("d", 5000), Hits: 300, Share: 0.75}}}
	p := sendToFile(t, n)
	if got := utf8.RuneCountInString(p.Subject); got > 260 || !strings.Contains(p.Subject, "is at 20.0× its normal") {
		t.Errorf("subject of %d runes: %q", got, p.Subject)
	}
}

// Who sent the views is in both parts: visitors, the busiest client's
// share with the mark, and the classes worth telling.
func TestMessageShowsWhoSentTheViews(t *testing.T) {
	n := testNotification()
	n.Why = &crossing.Why{Kind: "threshold", Count: 1000, Baseline: 900, Clients: &crossing.Clients{Views: 1000, Keyed: 1000, Visitors: 3,
		TopViews: 820, TopShare: 0.82, Hits: 2000, Mostly: crossing.MostlyOneClient,
		Classes: []crossing.ClassShare{{Class: "human", Hits: 1000, Counted: true}, {Class: "bot", Hits: 800}, {Class: "ai_crawler", Hits: 100}}}}
	p := sendToFile(t, n)
	for name, body := range map[string]string{"text": p.Text, "html": p.HTML} {
		for _, want := range []string{"1,000 views from 3 visitors; one client sent 82% (mostly one client)", "bots 40% of hits, AI crawlers 5%"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s part lacks %q:\n%s", name, want, body)
			}
		}
	}
}
