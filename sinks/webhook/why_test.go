package webhook_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/sinks/webhook"
)

// The crossing's why rides in the v1 payload as an optional object, the
// referrer domains as JSON strings (escaped by encoding/json, never
// interpreted); a crossing without one has no "why" key.
func TestPayloadCarriesWhy(t *testing.T) {
	n := notify.Notification{Key: "k", Rule: "r", Site: "s", Path: "/p", Count: 400,
		Why: &crossing.Why{Kind: "spike", Count: 400, Baseline: 20, Factor: 4, Ratio: 20, Rank: 2, RankOf: 9,
			Referrers: []crossing.ReferrerShare{{Domain: "<script>x</script>", Hits: 3, Share: 0.5}}}}
	body, err := json.Marshal(webhook.NewPayload("hooks", n))
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Crossing struct {
			Why *crossing.Why `json:"why"`
		} `json:"crossing"`
	}
	if err := json.Unmarshal(body, &back); err != nil {
		t.Fatal(err)
	}
	w := back.Crossing.Why
	if w == nil || w.Rank != 2 || w.Baseline != 20 || len(w.Referrers) != 1 || w.Referrers[0].Domain != "<script>x</script>" {
		t.Errorf("why in the payload: %s", body)
	}
	if strings.Contains(string(body), "<script>") {
		t.Errorf("payload carries raw markup: %s", body)
	}
	n.Why = nil
	if body, _ := json.Marshal(webhook.NewPayload("hooks", n)); strings.Contains(string(body), `"why"`) {
		t.Errorf("payload without a why has the key: %s", body)
	}
}

func TestChatMessagesCarryWhy(t *testing.T) {
	n := notify.Notification{Key: "k", Rule: "r", Site: "s", Path: "/p", Count: 400, Threshold: 80, Window: "1h",
		Why: &crossing.Why{Kind: "spike", Count: 400, Baseline: 20, Factor: 4, Ratio: 20, Rank: 2, RankOf: 9,
			Referrers:     []crossing.ReferrerShare{{Domain: "news.ycombinator.com", Hits: 300, Share: 0.75, BaselineShare: 0.02}, {Domain: "<b>x</b>\r\nBcc: y", Hits: 1, Share: 0.01}},
			NewReferrers:  []string{"news.ycombinator.com"},
			BusiestMinute: time.Date(2026, 11, 24, 9, 41, 0, 0, time.UTC), BusiestHits: 37}}
	got := map[string]string{}
	for _, f := range webhook.ChatFacts(n) {
		got[f[0]] = f[1]
	}
	for name, want := range map[string]string{
		"Normal":         "20 views (now 20.0×)",
		"Rank on site":   "2 of 9 pages",
		"New referrers":  "news.ycombinator.com",
		"Busiest minute": "09:41 UTC, 37 views",
	} {
		if got[name] != want {
			t.Errorf("%s: %q, want %q", name, got[name], want)
		}
	}
	if r := got["Referrers"]; !strings.HasPrefix(r, "news.ycombinator.com 75% (before 2%)") || strings.ContainsAny(r, "\r\n") {
		t.Errorf("Referrers: %q", r)
	}
}

func TestChatFactsSayTheBurstItFiredOn(t *testing.T) {
	n := notify.Notification{Key: "k", Rule: "r", Site: "s", Path: "/p", Count: 94, Threshold: 46, Window: "1h",
		Why: &crossing.Why{Kind: "unusual", Count: 94, Baseline: 10, Low: 2, High: 22.4, Ratio: 9.4,
			Burst: 10 * time.Minute, BurstCount: 80, BurstBaseline: 1.67, BurstHigh: 7.6}}
	got := map[string]string{}
	for _, f := range webhook.ChatFacts(n) {
		got[f[0]] = f[1]
	}
	if got["Normal"] != "expected 2–23 views (now 9.4×)" || got["Fired on burst"] != "80 views in 10 minutes, expected 0–8 (now 47.9×)" {
		t.Errorf("facts %q", got)
	}
}

// A drop heard on its hours together says those, under their own name.
func TestChatFactsSayTheHoursADropFiredOn(t *testing.T) {
	n := notify.Notification{Key: "k", Rule: "r", Site: "s", Path: "/p", Count: 4, Threshold: 5, Window: "1h",
		Why: &crossing.Why{Kind: "unusual", Count: 4, Baseline: 23, Low: 11, High: 39, Direction: "down",
			Burst: 3 * time.Hour, BurstCount: 15, BurstBaseline: 70, BurstLow: 43.2, BurstHigh: 102.5}}
	got := map[string]string{}
	for _, f := range webhook.ChatFacts(n) {
		got[f[0]] = f[1]
	}
	if got["Fired on hours"] != "15 views in 3 hours, expected 43–103 (now 0.2×)" || got["Fired on burst"] != "" {
		t.Errorf("facts %q", got)
	}
}

// A chat title says what happened to the page and fits Slack's header
// (150 characters) however long the path and the referrer domain are:
// the path gives way first.
func TestChatTitleSaysWhatHappened(t *testing.T) {
	n := notify.Notification{Path: "/launch", Count: 280, Threshold: 180, Window: "1h",
		Why: &crossing.Why{Kind: "spike", Ratio: 6.2, Direction: "up",
			Referrers: []crossing.ReferrerShare{{Domain: "news.ycombinator.com", Share: 0.72}}}}
	if got, want := webhook.ChatTitle(n), "/launch is at 6.2× its normal: 280 views in 1h, mostly from news.ycombinator.com"; got != want {
		t.Errorf("title %q, want %q", got, want)
	}
	n.Path = "/" + strings.Repeat("p", 5000)
	n.Why.Referrers[0].Domain = strings.Repeat("d", 5000) + "\r\nBcc: x"
	got := webhook.ChatTitle(n)
	if utf8.RuneCountInString(got) > 150 || !strings.Contains(got, "is at 6.2× its normal") || strings.ContainsAny(got, "\r\n") {
		t.Errorf("title (%d runes) %q", utf8.RuneCountInString(got), got)
	}
}

// Who sent the views is a fact of its own, with the mark when one
// client sent most of them, and the classes worth telling.
func TestChatFactsSayWhoSentTheViews(t *testing.T) {
	n := notify.Notification{Key: "k", Rule: "r", Site: "s", Path: "/p", Count: 1000,
		Why: &crossing.Why{Kind: "threshold", Count: 1000, Clients: &crossing.Clients{Views: 1000, Keyed: 1000, Visitors: 3, TopViews: 820, TopShare: 0.82,
			Hits: 1000, Classes: []crossing.ClassShare{{Class: "human", Hits: 600}, {Class: "bot", Hits: 400}}, Mostly: crossing.MostlyOneClient}}}
	got := map[string]string{}
	for _, f := range webhook.ChatFacts(n) {
		got[f[0]] = f[1]
	}
	if v := got["Visitors"]; v != "1,000 views from 3 visitors; one client sent 82% (mostly one client)" {
		t.Errorf("Visitors fact %q", v)
	}
	if v := got["Clients"]; v != "bots 40% of hits" {
		t.Errorf("Clients fact %q", v)
	}
}

// A site's "no data" says when its gap began and what its tailers said
// of its logs, and no page, views, threshold or window, which it has
// none of.
func TestChatFactsOfNoDataSayTheGapAndTheLogs(t *testing.T) {
	at := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	n := notify.Notification{Key: "k", Rule: "unusual", Site: "example.com", Event: "fire", CrossedAt: at.Add(time.Hour),
		Why: &crossing.Why{Kind: crossing.KindNoData, Since: at, Feeds: &crossing.Feeds{Logs: 2, AtEnd: 2, Named: 2}}}
	got := map[string]string{}
	for _, f := range webhook.ChatFacts(n) {
		got[f[0]] = f[1]
	}
	if got["Gap began"] != "2026-12-06T03:00:00Z" || got["Logs"] != "its 2 logs named for it, of the tailers heard from, are published to the end and loaded: its web servers wrote no lines for it" {
		t.Errorf("facts %q", got)
	}
	for _, k := range []string{"Page", "Views", "Threshold", "Window", "Normal"} {
		if _, ok := got[k]; ok {
			t.Errorf("facts have %s: %q", k, got)
		}
	}
}

// A surge heard against its hours before says them among its facts.
func TestChatFactsSayTheHoursBefore(t *testing.T) {
	n := notify.Notification{Key: "k", Rule: "r", Site: "s", Path: "/p", Count: 726, Threshold: 600, Window: "1h",
		Why: &crossing.Why{Kind: "unusual", Count: 726, Baseline: 230, Low: 70, High: 497, Ratio: 3.2, Direction: "up",
			HoursBefore: 806, HoursBeforeRatio: 0.477, HoursBeforeSpan: 2 * time.Hour}}
	got := map[string]string{}
	for _, f := range webhook.ChatFacts(n) {
		got[f[0]] = f[1]
	}
	if got["Hours before"] != "806 views in the 2 hours before, where it is usually 0.48 × them (now 0.90 ×)" {
		t.Errorf("facts %q", got)
	}
}
