package console

import (
	"context"
	"fmt"
	"html"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/console/chart"
	"github.com/pagewatch/pagewatch/domain/clocks"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/internal/testserver/browsertest"
	"github.com/prometheus/client_golang/prometheus"
)

// A page watched by an unusual rule gets its usual range as a band: per
// step, the rule's range for its window ending with the step, from the
// page's hours; a page under threshold rules alone gets none.
func TestPageBandIsTheRulesUsualRange(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	var hours []traffic.MinuteHits
	for h := now.Add(-35 * 24 * time.Hour); h.Before(now); h = h.Add(time.Hour) {
		n := uint64(60) // 60 views an hour, 600 from 9:00 to 17:00
		if h.Hour() >= 9 && h.Hour() < 17 {
			n = 600
		}
		hours = append(hours, traffic.MinuteHits{Minute: h, Hits: n})
	}
	unusual := rules.Rule{Name: "unusual", Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"),
		Unusual: &rules.Unusual{}, Notify: rules.Notify{Recipients: []string{"a@example.com"}}}
	threshold := rules.Rule{Name: "pricing", Site: "example.com", Path: "/pricing", Thresholds: rules.Thresholds{100},
		Window: rules.ParseWindow("1h"), Notify: rules.Notify{Recipients: []string{"a@example.com"}}}
	for _, r := range []*rules.Rule{&unusual, &threshold} {
		if err := r.Validate("rules"); err != nil {
			t.Fatal(err)
		}
	}
	serve := func(rs ...rules.Rule) *pagePages {
		st := &fakeStore{series: hours}
		return &pagePages{&frame{deps: Deps{Store: st, Now: time.Now, Rules: func() []rules.Rule { return rs }}, starts: newSiteStarts(st, time.Now)}}
	}
	from := now.Add(-24 * time.Hour)
	b, err := serve(threshold, unusual).pageBand(context.Background(), "example.com", "/pricing", from, now, time.Hour)
	if err != nil || b == nil {
		t.Fatalf("band %+v, %v", b, err)
	}
	if b.Rule != "unusual" || len(b.Points) != 24 {
		t.Fatalf("band of %s with %d points, want unusual's, 24", b.Rule, len(b.Points))
	}
	for _, p := range b.Points {
		// The hour ending at the step's end: 60 or 600 views, inside the range.
		n := 60.0
		if h := p.T.Hour(); h >= 9 && h < 17 {
			n = 600
		}
		if !(p.Low <= n && n <= p.High) || p.High > 3*n {
			t.Errorf("%s: range %.0f–%.0f for an hour of %.0f", p.T.Format("15:04"), p.Low, p.High, n)
		}
	}
	svg := chart.SVG(chart.Spec{From: from, To: now, Band: chartBand(b)})
	if !strings.Contains(svg, `class="band"`) || !strings.Contains(svg, html.EscapeString("unusual: the page's usual range, in views per hour")) {
		t.Errorf("the chart has no band: %s", svg[:min(len(svg), 300)])
	}
	if b, _ := serve(threshold).pageBand(context.Background(), "example.com", "/pricing", from, now, time.Hour); b != nil {
		t.Errorf("a threshold rule drew a band: %+v", b)
	}
}

// The band in a real browser: drawn behind the line, named in the
// legend; the screenshot is kept with `go test -artifacts`.
func TestPageBandInBrowser(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Hour)
	var hours []traffic.MinuteHits
	for h := now.Add(-35 * 24 * time.Hour); h.Before(now.Add(time.Hour)); h = h.Add(time.Hour) {
		n := uint64(40 + 20*(h.Hour()%3)) // a ragged night
		if h.Hour() >= 9 && h.Hour() < 17 {
			n = 400 + uint64(30*(h.Hour()%4))
		}
		if now.Sub(h) < 5*time.Hour && now.Sub(h) >= 3*time.Hour {
			n *= 5 // a surge two hours ago
		}
		hours = append(hours, traffic.MinuteHits{Minute: h, Hits: n})
	}
	unusual := rules.Rule{Name: "unusual", Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"),
		Unusual: &rules.Unusual{}, Notify: rules.Notify{Recipients: []string{"a@example.com"}}}
	if err := unusual.Validate("rules"); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Auth, cfg.Listen = AuthNone, "127.0.0.1:0"
	s, err := New(cfg, Deps{Store: &fakeStore{series: hours}, DeadLetters: &fakeDead{}, Silences: &fakeSilences{}, RuleStates: fakeStates{now: now},
		Rules: func() []rules.Rule { return []rules.Rule{unusual} }, Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(),
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)

	p := browsertest.Start(t).NewPage(t)
	if st := p.Goto(srv.URL + "/page?site=example.com&path=%2Fpricing&range=7d"); st != http.StatusOK {
		t.Fatalf("GET the page: status %d", st)
	}
	if n := p.Count(`[data-testid="chart-band"]`); n != 1 {
		t.Errorf("%d bands on the chart, want 1", n)
	}
	if got := p.Text(`[data-testid="chart-band-legend"]`); got != "unusual: the page's usual range, in views per hour" {
		t.Errorf("legend %q", got)
	}
	p.Screenshot("page-band")
}

// A rule that learns each site's clocks (zone: auto) draws the band the
// sweep judges by: on a page whose office hours keep New York's clocks,
// the week after America's change, on New York's hours; the same rule
// on UTC's would put its edges an hour off.
func TestPageBandReadsTheSitesLearnedClocks(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC) // six days after the change
	var hours []traffic.MinuteHits
	var site []traffic.SiteHour
	for h := now.Add(-35 * 24 * time.Hour); h.Before(now); h = h.Add(time.Hour) {
		n := uint64(60) // 60 views an hour, 600 from 9:00 to 17:00 in New York
		if l := h.In(ny).Hour(); l >= 9 && l < 17 {
			n = 600
		}
		hours = append(hours, traffic.MinuteHits{Minute: h, Hits: n})
		site = append(site, traffic.SiteHour{Site: "example.com", Hour: h, Minutes: 60, Hits: n})
	}
	band := func(zone string) *bandView {
		r := rules.Rule{Name: "unusual", Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"), Zone: zone,
			Unusual: &rules.Unusual{}, Notify: rules.Notify{Recipients: []string{"a@example.com"}}}
		if err := r.Validate("rules"); err != nil {
			t.Fatal(err)
		}
		st := &fakeStore{series: hours, siteHours: site}
		clock := func() time.Time { return now }
		p := &pagePages{&frame{deps: Deps{Store: st, Now: clock, Rules: func() []rules.Rule { return []rules.Rule{r} }},
			starts: newSiteStarts(st, clock), clocks: clocks.NewLearner(st, nil)}}
		b, err := p.pageBand(context.Background(), "example.com", "/pricing", now.Add(-24*time.Hour), now, time.Hour)
		if err != nil || b == nil {
			t.Fatalf("zone %q: band %+v, %v", zone, b, err)
		}
		return b
	}
	outside := func(b *bandView) []string {
		var out []string
		for _, p := range b.Points {
			n := 60.0
			if l := p.T.In(ny).Hour(); l >= 9 && l < 17 {
				n = 600
			}
			if !(p.Low <= n && n <= p.High) {
				out = append(out, fmt.Sprintf("%s NY: %.0f–%.0f for %.0f", p.T.In(ny).Format("15:04"), p.Low, p.High, n))
			}
		}
		return out
	}
	if out := outside(band(rules.ZoneAuto)); len(out) > 0 {
		t.Errorf("zone auto: hours outside their band: %v", out)
	}
	if out := outside(band("")); len(out) == 0 {
		t.Errorf("on UTC's clocks every hour was inside its band: the test does not show what learning does")
	}
}

// A page growing 9 % a week gets its band from its normal carried
// forward by its trend, as the sweep judges it: centred on the page as
// it is now (612 for an hour of 599), not on the median of its 4 weeks'
// samples (503, a range of 312–694).
func TestPageBandFollowsAPagesTrend(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	level := func(h time.Time) float64 { return 600 * math.Pow(1.09, -now.Sub(h).Hours()/(7*24)) }
	var hours []traffic.MinuteHits
	for h := now.Add(-49 * 24 * time.Hour); h.Before(now); h = h.Add(time.Hour) {
		hours = append(hours, traffic.MinuteHits{Minute: h, Hits: uint64(math.Round(level(h)))})
	}
	unusual := rules.Rule{Name: "unusual", Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"),
		Unusual: &rules.Unusual{}, Notify: rules.Notify{Recipients: []string{"a@example.com"}}}
	if err := unusual.Validate("rules"); err != nil {
		t.Fatal(err)
	}
	st := &fakeStore{series: hours}
	p := &pagePages{&frame{deps: Deps{Store: st, Now: time.Now, Rules: func() []rules.Rule { return []rules.Rule{unusual} }}, starts: newSiteStarts(st, time.Now)}}
	b, err := p.pageBand(context.Background(), "example.com", "/grows", now.Add(-24*time.Hour), now, time.Hour)
	if err != nil || b == nil || len(b.Points) != 24 {
		t.Fatalf("band %+v, %v; want 24 points", b, err)
	}
	for _, pt := range b.Points {
		n := level(pt.T.Add(-time.Hour))
		if mid := (pt.Low + pt.High) / 2; !(pt.Low <= n && n <= pt.High) || math.Abs(mid-n) > 0.05*n {
			t.Errorf("%s: range %.0f–%.0f for an hour of %.0f: want it inside, centred within 5 %%", pt.T.Format("01-02 15:04"), pt.Low, pt.High, n)
		}
	}
}

// levelStates is a sweeper's state of a page that rose for good.
type levelStates struct{ level *rules.Raised }

func (f levelStates) State(context.Context, string, string, string, bool) (RuleState, bool, error) {
	return RuleState{Level: f.level}, true, nil
}

// A page that rose for good is judged at its new level from when that
// was set, two days after it rose: its band is drawn there too, not at
// its old normal, which its line sat far above while no message said so.
func TestPageBandIsDrawnAtItsNewLevel(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	rise, set := now.Add(-5*24*time.Hour), now.Add(-3*24*time.Hour)
	var hours []traffic.MinuteHits
	for h := now.Add(-35 * 24 * time.Hour); h.Before(now); h = h.Add(time.Hour) {
		n := uint64(100)
		if !h.Before(rise) {
			n = 250
		}
		hours = append(hours, traffic.MinuteHits{Minute: h, Hits: n})
	}
	unusual := rules.Rule{Name: "unusual", Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"),
		Unusual: &rules.Unusual{}, Notify: rules.Notify{Recipients: []string{"a@example.com"}}}
	if err := unusual.Validate("rules"); err != nil {
		t.Fatal(err)
	}
	level := &rules.Raised{Steps: []rules.LevelStep{{Since: rise, Ratio: 2.5, Set: set}}}
	st := &fakeStore{series: hours}
	p := &pagePages{&frame{deps: Deps{Store: st, Now: time.Now, Rules: func() []rules.Rule { return []rules.Rule{unusual} },
		RuleStates: levelStates{level}}, starts: newSiteStarts(st, time.Now)}}
	b, err := p.pageBand(context.Background(), "example.com", "/up", now.Add(-4*24*time.Hour), now, time.Hour)
	if err != nil || b == nil {
		t.Fatalf("band %+v, %v", b, err)
	}
	for _, pt := range b.Points {
		end := pt.T.Add(time.Hour)
		inside := pt.Low <= 250 && 250 <= pt.High
		if end.Before(set) && inside {
			t.Errorf("%s, before its level was set: %.0f–%.0f holds the page at 250", pt.T, pt.Low, pt.High)
		}
		if !end.Before(set) && !inside {
			t.Errorf("%s, at its new level: %.0f–%.0f, the page at 250", pt.T, pt.Low, pt.High)
		}
	}
}
