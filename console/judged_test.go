package console

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
)

func TestJudgedText(t *testing.T) {
	for _, c := range []struct {
		name string
		x    crossingView
		why  *crossing.Why
		want string
	}{
		{"threshold", crossingView{Key: "pricing.abc.1000", Threshold: 1000}, nil, "more than 1,000"},
		{"threshold with a why", crossingView{Key: "pricing.abc.1000", Threshold: 1000}, &crossing.Why{Kind: "threshold", Baseline: 1000}, "more than 1,000"},
		{"up", crossingView{Key: "u.abc.3"}, &crossing.Why{Kind: "unusual", Low: 70, High: 125, Direction: "up"}, "above usual 70–125"},
		{"down", crossingView{Key: "u.abc.4"}, &crossing.Why{Kind: "unusual", Low: 300, High: 420, Direction: "down"}, "below usual 300–420"},
		{"outlasting its bursts", crossingView{Key: "u.abc.5"}, &crossing.Why{Kind: "unusual", Low: 0, High: 39, Direction: "up", Lasted: 160 * time.Minute, BurstsLast: 100 * time.Minute},
			"above usual 0–39 for 2 h 40 min, longer than its usual bursts (1 h 40 min)"},
		{"a new page's launch", crossingView{Key: "u.abc.1"}, &crossing.Why{Kind: "unusual", Low: 0, High: 2.6, Direction: "up", Launch: true, LaunchPassed: 168},
			"above usual 0–3, a new page past all but one of its site's launches (2nd largest 168)"},
		{"a busy site's launch", crossingView{Key: "u.abc.1"}, &crossing.Why{Kind: "unusual", Low: 0, High: 2.6, Direction: "up", Launch: true, LaunchPassed: 231, LaunchRank: 6},
			"above usual 0–3, a new page past 19 in 20 of its site's launches (6th largest 231)"},
		{"a site's first launches", crossingView{Key: "u.abc.1"}, &crossing.Why{Kind: "unusual", Low: 0, High: 2.6, Direction: "up", Launch: true},
			"above usual 0–3, a new page among its site's first launches"},
		{"a page at nothing between its bursts", crossingView{Key: "u.abc.3"}, &crossing.Why{Kind: "unusual", Low: 0, High: 2.8, Direction: "up", Bursts: 11, BurstsPassed: 990},
			"above usual 0–3, past what its 11 bursts reach (990)"},
		{"escalate", crossingView{Key: "u.abc.3.x4"}, &crossing.Why{Kind: "unusual", Low: 70, High: 125, Step: 4}, "escalated ×4, usual 70–125"},
		{"resolve", crossingView{Key: "u.abc.3.resolved"}, &crossing.Why{Kind: "unusual", Peak: 2300}, "resolved, peak 2,300"},
		{"resolve, not back", crossingView{Key: "u.abc.4.resolved"}, &crossing.Why{Kind: "unusual", Direction: "down", Peak: 0, NewNormal: true}, "resolved, not back: its normal followed it"},
		{"resolve at a new level", crossingView{Key: "u.abc.5.resolved"}, &crossing.Why{Kind: "unusual", Direction: "up", NewNormal: true, Raised: 2.634}, "resolved, not back: a new level at 2.6× its normal"},
		{"back from a new level", crossingView{Key: "u.abc.6.level.resolved"}, &crossing.Why{Kind: "unusual", Direction: "up", LevelEnded: true, Raised: 2.634}, "resolved, back at its old level"},
		{"spike", crossingView{Key: "s.abc.2"}, &crossing.Why{Kind: "spike", Baseline: 100, Ratio: 4.2, Direction: "up"}, "above normal 100 (4.2×)"},
		{"an episode's crossing, its why not kept", crossingView{Key: "u.abc.3.resolved"}, nil, "resolve"},
		{"no data", crossingView{Key: "_nodata.unusual.example_com.2"}, &crossing.Why{Kind: crossing.KindNoData, Since: time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC),
			Feeds: &crossing.Feeds{Logs: 1, AtEnd: 1, Named: 1}}, "no data since 03:00 UTC, 6 Dec; its log named for it, of the tailers heard from, is published to the end and loaded: its web servers wrote no lines for it"},
		{"data again", crossingView{Key: "_nodata.unusual.example_com.2.resolved"}, &crossing.Why{Kind: crossing.KindNoData, Since: time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)},
			"data again, none since 03:00 UTC, 6 Dec"},
	} {
		if got := judgedText(c.x, c.why); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestMarkOfAResolveNotBack(t *testing.T) {
	x := crossingView{Key: "u.abc.4.resolved", Rule: "unusual", Shown: "2026-03-15 13:10", Count: 0, Window: "1h"}
	m := markOf(x, &crossing.Why{Kind: "unusual", Direction: "down", NewNormal: true})
	if want := "unusual resolved at 2026-03-15 13:10: not back, 0 views in 1h, its normal followed it"; m.Label != want || m.Event != "resolve" {
		t.Errorf("mark %+v, want label %q", m, want)
	}
}

// A page's new level and its end are marked as such on its chart (keyed
// "<episode>.level.resolved", a resolve).
func TestMarkOfANewLevel(t *testing.T) {
	x := crossingView{Key: "u.abc.5.resolved", Rule: "unusual", Shown: "2026-02-27 12:15", Count: 6073, Window: "1h"}
	m := markOf(x, &crossing.Why{Kind: "unusual", Direction: "up", NewNormal: true, Raised: 2.634})
	if want := "unusual resolved at 2026-02-27 12:15: not back, 6,073 views in 1h, a new level at 2.6× its normal"; m.Label != want || m.Event != "resolve" {
		t.Errorf("mark %+v, want label %q", m, want)
	}
	x = crossingView{Key: "u.abc.5.level.resolved", Rule: "unusual", Shown: "2026-03-04 03:55", Count: 1141, Window: "1h"}
	m = markOf(x, &crossing.Why{Kind: "unusual", Direction: "up", LevelEnded: true, Raised: 2.634})
	if want := "unusual resolved at 2026-03-04 03:55: back to its old level, 1,141 views in 1h"; m.Label != want || m.Event != "resolve" {
		t.Errorf("mark %+v, want label %q", m, want)
	}
}

// A site's "no data" and its resolve have no page, window or count of
// views: the history says "whole site" and dashes, with no empty link
// to a page and no count of 0, even without their whys (the fake store
// keeps none); a page's crossing beside them reads as before. Try a
// rule's messages say so too.
func TestSiteWideCrossingsRead(t *testing.T) {
	b := setup(t, nil)
	b.store.mu.Lock()
	b.store.crossings = append(b.store.crossings,
		CrossingRow{Key: "_nodata.unusual.example_com.2", Rule: "unusual", Site: "example.com", CrossedAt: b.store.crossings[0].CrossedAt})
	b.store.mu.Unlock()
	alice, _, _ := b.login(t, "alice", "pw-alice")                  //nolint:bodyclose // login reads and closes it
	_, body := get(t, alice, b.srv.URL+"/history?site=example.com") //nolint:bodyclose // get reads and closes it
	row := func(key string) string {
		m := regexp.MustCompile(`(?s)<tr data-testid="crossing"[^>]*data-key="` + regexp.QuoteMeta(key) + `">(.*?)</tr>`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no row %s:\n%s", key, body)
		}
		return m[1]
	}
	nodata := row("_nodata.unusual.example_com.2")
	for _, want := range []string{`<td class="path" data-testid="page"><span class="muted">whole site</span></td>`,
		`<td data-testid="window"><span class="muted">–</span></td>`, `<td class="num" data-testid="count"><span class="muted">–</span></td>`} {
		if !strings.Contains(nodata, want) {
			t.Errorf("no data row lacks %s:\n%s", want, nodata)
		}
	}
	if strings.Contains(nodata, "/page?") || strings.Contains(nodata, "data-value") {
		t.Errorf("no data row links a page or counts:\n%s", nodata)
	}
	pricing := row("pricing.k.1")
	for _, want := range []string{`<a href="/page?path=%2Fpricing&amp;site=example.com">/pricing</a>`, `<td data-testid="window">1h</td>`,
		`data-testid="count" data-value="1234">1234<`} {
		if !strings.Contains(pricing, want) {
			t.Errorf("pricing row lacks %s:\n%s", want, pricing)
		}
	}

	tmpl, err := parseTemplates()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	v := tryView{Ran: true, Total: 2, Messages: []tryMessage{
		{Rule: "unusual", Site: "example.com", Event: "fire", SiteWide: true, Subject: "no data"},
		{Rule: "unusual", Site: "example.com", Path: "/pricing", Event: "fire", Count: 590, Subject: "up"}}}
	if err := tmpl.pages["try"].ExecuteTemplate(&buf, "layout", view{Data: v}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<td class="path">example.com <span class="muted">whole site</span></td><td class="ev-fire">fire</td><td class="num"><span class="muted">–</span></td>`,
		`<td class="path">example.com/pricing</td><td class="ev-fire">fire</td><td class="num">590</td>`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("try messages lack %s:\n%s", want, buf.String())
		}
	}
}
