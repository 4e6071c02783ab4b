package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/console"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/browsertest"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/pipeline/sweep/pagestate"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

// seedClass is hits of one class from some client keys (none: the hits
// carry no key) on a page.
type seedClass struct {
	class     hit.Class
	uncounted bool
	hits      int
	clients   uint64 // how many keys; 0: the hits carry none
	firstKey  uint64
	burst     int // hits a client sends in a row (0: 1)
}

// classHits makes a batch of a page's hits per seeds, each class's
// spread over span from start, and the views and visitors they are.
func classHits(seq uint64, path string, start time.Time, span time.Duration, seeds []seedClass) (b hit.Batch, views, visitors uint64) {
	b.Seq = seq
	off := uint64(0)
	for _, s := range seeds {
		for i := 0; i < s.hits; i++ {
			off += 100
			var key uint64
			if s.clients > 0 {
				key = s.firstKey + uint64(i/max(s.burst, 1))%s.clients
			}
			at := start.Add(time.Duration(i) * span / time.Duration(s.hits))
			b.Hits = append(b.Hits, hit.Hit{Time: at, Site: "example.com", Path: path, Method: "GET", Status: 200,
				Class: s.class, Uncounted: s.uncounted, Client: key, Offset: off})
		}
		if !s.uncounted {
			views += uint64(s.hits)
			visitors += min(s.clients, uint64(s.hits))
		}
	}
	return b, views, visitors
}

// The console over a real ClickHouse, in Chromium: hits from several
// clients and classes, loaded twice, show as visitors beside views on
// the live view (and a new visitor arrives in place), as a second line
// on the page's chart, and as each class's share on the page view, with
// counted and not counted apart and numbers with thousands separators.
func TestConsoleInBrowserVisitors(t *testing.T) {
	br := browsertest.Start(t)
	chs := clickhousetest.Start(t)
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	cfg := clickhouse.DefaultConfig()
	cfg.Addr, cfg.Database = []string{chs.Addr}, "pw_console"
	ch, err := clickhouse.Open(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	if _, err := ch.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	// 40 minutes of hits ending 10 minutes ago: none in the last 5.
	start := now.Add(-50 * time.Minute)
	pricing, views, visitors := classHits(1, "/pricing", start, 40*time.Minute, []seedClass{
		{class: hit.ClassHuman, hits: 1250, clients: 40, firstKey: 1000, burst: 3},
		{class: hit.ClassAIAgent, hits: 30, clients: 3, firstKey: 2000},
		{class: hit.ClassUnknown, hits: 20},
		{class: hit.ClassBot, uncounted: true, hits: 300, clients: 5, firstKey: 3000},
		{class: hit.ClassAICrawler, uncounted: true, hits: 150, clients: 2, firstKey: 4000},
	})
	hostilePath := `/"><img src=x onerror=alert(1)>`
	hostile, _, _ := classHits(2, hostilePath, start, 40*time.Minute, []seedClass{{class: hit.ClassHuman, hits: 3, clients: 2, firstKey: 5000}})
	for range 2 { // a batch loaded twice counts once
		if err := ch.Hits().InsertHits(ctx, []hit.Batch{pricing, hostile}); err != nil {
			t.Fatal(err)
		}
	}

	ccfg := console.DefaultConfig()
	ccfg.Auth, ccfg.Listen, ccfg.LiveInterval = console.AuthNone, "127.0.0.1:0", 300*time.Millisecond
	spike := rules.Rule{Name: "spike", Site: "example.com", Path: "/pricing", Thresholds: rules.Thresholds{1000}, Window: rules.ParseWindow("1h"),
		Notify: rules.Notify{Recipients: []string{"a@example.com"}}}
	if err := spike.Validate("rules"); err != nil {
		t.Fatal(err)
	}
	// The sweeper's state: its client guard holds rule spike's surge
	// on /pricing.
	held := time.Now().UTC().Truncate(time.Second)
	states := sweeperStates(t, map[[2]string]pagestate.State{{"spike", "/pricing"}: {
		Held: &pagestate.Held{Since: held, At: held, Checked: held, Mostly: crossing.MostlyOneClient, Reason: "mostly one client: 97% of 1,204 views"}}})
	srv, err := console.New(ccfg, console.Deps{Store: ch.Console(), RuleStates: states, Rules: func() []rules.Rule { return []rules.Rule{spike} },
		Logger: logger, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	base := "http://" + srv.Addr()

	// The live view: 1,300 views and 43 visitors of /pricing in the hour.
	p := br.NewPage(t)
	if st := p.Goto(base + "/live"); st != http.StatusOK {
		t.Fatalf("GET /live: %d", st)
	}
	row := func(path, testid string) string {
		return `[data-testid=live-row][data-path="` + strings.ReplaceAll(path, `"`, `\"`) + `"] [data-testid=` + testid + `]`
	}
	if got, want := p.Text(row("/pricing", "views-1h")), traffic.FormatCount(views); got != want || want != "1,300" {
		t.Errorf("/live: /pricing's views in the hour %q, want %q (1,300)", got, want)
	}
	if got, want := p.Text(row("/pricing", "visitors-1h")), traffic.FormatCount(visitors); got != want || want != "43" {
		t.Errorf("/live: /pricing's visitors in the hour %q, want %q (43)", got, want)
	}
	if got := p.Text(row(hostilePath, "visitors-1h")); got != "2" {
		t.Errorf("/live: the hostile page's visitors %q, want 2", got)
	}
	// A new visitor's hits arrive: the numbers change in place.
	more, _, _ := classHits(3, "/pricing", now.Add(-time.Minute), time.Second, []seedClass{{class: hit.ClassHuman, hits: 2, clients: 1, firstKey: 9000}})
	if err := ch.Hits().InsertHits(ctx, []hit.Batch{more}); err != nil {
		t.Fatal(err)
	}
	testcheck.Eventually(t, 15*time.Second, "the live view to show 1,302 views and 44 visitors of /pricing", func() error {
		if v, u := p.Text(row("/pricing", "views-1h")), p.Text(row("/pricing", "visitors-1h")); v != "1,302" || u != "44" {
			return fmt.Errorf("shows %s views, %s visitors", v, u)
		}
		return nil
	})
	if got := p.Text(row("/pricing", "visitors-5m")); got != "1" {
		t.Errorf("/live: /pricing's visitors in 5 minutes %q, want 1 (the new one)", got)
	}
	// The surge the client guard holds: a badge beside the page.
	if !p.Visible(row("/pricing", "held")) || p.Text(row("/pricing", "held")) != "held: mostly one client" || p.Visible(row(hostilePath, "held")) {
		t.Errorf("/live: held badges %q on /pricing (visible %v), hostile page's visible %v", p.Text(row("/pricing", "held")), p.Visible(row("/pricing", "held")), p.Visible(row(hostilePath, "held")))
	}
	p.Screenshot("live-visitors")

	// The page view: two lines and their legend, and the classes.
	if st := p.Goto(base + "/page?" + url.Values{"site": {"example.com"}, "path": {"/pricing"}}.Encode()); st != http.StatusOK {
		t.Fatalf("GET /page: %d", st)
	}
	if got := p.Text("[data-testid=page-total]"); got != "1,302" {
		t.Errorf("/page: total %q, want 1,302", got)
	}
	if d, _ := p.Attr("svg[data-testid=chart] [data-testid=chart-visitors]", "d"); !strings.HasPrefix(d, "M") {
		t.Errorf("/page: visitors line %q: nothing drawn", d)
	}
	if got := p.Text("[data-testid=chart-legend-visitors]"); !strings.HasPrefix(got, "visitors per minute") {
		t.Errorf("/page: legend %q", got)
	}
	want := map[string][3]string{ // hits, share, counted as (of 1,752 hits)
		"human":      {"1,252", "71%", "views"},
		"ai_agent":   {"30", "1.7%", "views"},
		"unknown":    {"20", "1.1%", "views"},
		"bot":        {"300", "17%", "not counted"},
		"ai_crawler": {"150", "8.6%", "not counted"},
	}
	var order []string
	p.Eval(`() => [...document.querySelectorAll('[data-testid=class]')].map(e => e.dataset.class)`, nil, &order)
	if fmt.Sprint(order) != "[human ai_agent unknown bot ai_crawler]" {
		t.Errorf("/page: classes in the order %v", order)
	}
	for class, w := range want {
		sel := `[data-testid=class][data-class=` + class + `] [data-testid=class-`
		got := [3]string{p.Text(sel + "hits]"), p.Text(sel + "share]"), p.Text(sel + "counted]")}
		if got != w {
			t.Errorf("/page: %s %q, want %q", class, got, w)
		}
	}
	if got := p.Text("[data-testid=class-split]"); !strings.Contains(got, "Counted as views: 1,302 of 1,752 hits (74%)") || !strings.Contains(got, "not counted (ingest.tail.pages.count_classes): 450 (26%)") {
		t.Errorf("/page: split %q", got)
	}
	if n := p.Count("svg[data-testid=class-bar] rect.seg"); n != 5 {
		t.Errorf("/page: %d segments in the class bar, want 5", n)
	}
	if got := p.Text("[data-testid=held]"); got != "Held, not alerted: spike would fire, but mostly one client: 97% of 1,204 views." {
		t.Errorf("/page: held note %q", got)
	}
	p.Screenshot("page-visitors")

	// A hostile page's view: its path as text, its two visitors drawn.
	if st := p.Goto(base + "/page?" + url.Values{"site": {"example.com"}, "path": {hostilePath}}.Encode()); st != http.StatusOK {
		t.Fatalf("GET the hostile page: %d", st)
	}
	if got := p.Text("h1"); got != "example.com"+hostilePath {
		t.Errorf("hostile page heading %q", got)
	}
	if got := p.Text(`[data-testid=class][data-class=human] [data-testid=class-clients]`); got != "2" {
		t.Errorf("hostile page: human clients %q, want 2", got)
	}
	p.Screenshot("page-hostile-visitors")
}
