package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/console"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/internal/testserver/browsertest"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/pipeline/sweep/pagestate"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

// rhythm is /pricing's usual views in an hour: quiet nights, a busy
// afternoon, weekends at 40%.
func rhythm(h time.Time) uint64 {
	day := 20 + 100*math.Max(0, math.Sin(math.Pi*float64(h.Hour()-6)/14))
	if wd := h.Weekday(); wd == time.Saturday || wd == time.Sunday {
		day *= 0.4
	}
	return uint64(math.Round(day))
}

// The console with a past, over a real ClickHouse in Chromium: five
// weeks of a page's hours with a weekly rhythm and an episode two days
// ago (fired, escalated, resolved, with their whys), and a surge now.
// The page chart draws the unusual rule's band and the three episode
// marks with their labels; the live view shows the surge as "× normal";
// the rules page shows the page's count against "usual A–B".
func TestConsoleInBrowserWithAPast(t *testing.T) {
	br := browsertest.Start(t)
	chs := clickhousetest.Start(t)
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	cfg := clickhouse.DefaultConfig()
	cfg.Addr, cfg.Database = []string{chs.Addr}, "pw_past"
	ch, err := clickhouse.Open(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	if _, err := ch.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	hour := now.Truncate(time.Hour)
	// The episode: two days ago, 10:00 to 16:00, six times the usual.
	surgeFrom := hour.Add(-48 * time.Hour).Truncate(24 * time.Hour).Add(10 * time.Hour)
	surgeTo := surgeFrom.Add(6 * time.Hour)
	var rows []string
	seq := uint64(1_000_000)
	for h := hour.Add(-35 * 24 * time.Hour); h.Before(hour); h = h.Add(time.Hour) {
		n := rhythm(h)
		if !h.Before(surgeFrom) && h.Before(surgeTo) {
			n *= 6
		}
		seq++
		rows = append(rows, fmt.Sprintf("('example.com', '/pricing', %d, %d, %d)", h.Unix(), seq, n))
	}
	chs.Query(t, "INSERT INTO pw_past.page_minutes (site, path, minute, seq, hits) VALUES "+strings.Join(rows, ", "))

	// The surge now: 700 views in the last 50 minutes, raw hits (the
	// live view reads them).
	start := now.Add(-50 * time.Minute)
	surge, _, _ := classHits(1, "/pricing", start, 49*time.Minute, []seedClass{{class: hit.ClassHuman, hits: 700, clients: 60, firstKey: 1}})
	// A page new today on a site with five weeks of data: no views
	// before, which the sweep judges it against (zeros), not "too little
	// history".
	launch, _, _ := classHits(2, "/launch", start, 49*time.Minute, []seedClass{{class: hit.ClassHuman, hits: 40, clients: 30, firstKey: 1000}})
	if err := ch.Hits().InsertHits(ctx, []hit.Batch{surge, launch}); err != nil {
		t.Fatal(err)
	}

	// The episode's crossings and their whys, as the sweep records them.
	fire, esc, res := surgeFrom.Add(55*time.Minute), surgeFrom.Add(2*time.Hour+55*time.Minute), surgeTo.Add(2*time.Hour+5*time.Minute)
	key := "unusual.example.com./pricing.3"
	crossings := []struct {
		key  string
		at   time.Time
		hits uint64
		why  string
	}{
		{key, fire, 590, `{"kind":"unusual","count":590,"baseline":95,"low":70,"high":125,"days":35,"weekly":true,"direction":"up"}`},
		{key + ".x3", esc, 720, `{"kind":"unusual","count":720,"baseline":110,"low":85,"high":140,"days":35,"weekly":true,"direction":"up","step":3}`},
		{key + ".resolved", res, 104, fmt.Sprintf(`{"kind":"unusual","count":104,"baseline":100,"low":75,"high":130,"peak":740,"peak_at":%q,"total":3900}`, esc.Format(time.RFC3339))},
	}
	for _, x := range crossings {
		chs.Query(t, fmt.Sprintf(`INSERT INTO pw_past.crossings (crossing_key, rule, site, path, window_text, threshold, hits, crossed_at)
VALUES ('%s', 'unusual', 'example.com', '/pricing', '1h', 0, %d, %d)`, x.key, x.hits, x.at.Unix()))
		chs.Query(t, fmt.Sprintf(`INSERT INTO pw_past.crossing_whys (crossing_key, crossed_at, why) VALUES ('%s', %d, '%s')`, x.key, x.at.Unix(), x.why))
	}

	ccfg := console.DefaultConfig()
	ccfg.Auth, ccfg.Listen, ccfg.LiveInterval = console.AuthNone, "127.0.0.1:0", 300*time.Millisecond
	unusual := rules.Rule{Name: "unusual", Site: "example.com", Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"),
		Unusual: &rules.Unusual{}, Notify: rules.Notify{Recipients: []string{"a@example.com"}}}
	if err := unusual.Validate("rules"); err != nil {
		t.Fatal(err)
	}
	// The sweeper's state: the unusual rule's episode on /pricing open
	// since the surge now began.
	since := start.Add(5 * time.Minute).Truncate(time.Second)
	states := sweeperStates(t, map[[2]string]pagestate.State{{"unusual", "/pricing"}: {State: rules.State{
		Episode: 4, LastFired: since, Open: &rules.Episode{Since: since, Peak: 700, PeakAt: since, Site: "example.com", Path: "/pricing"}}}})
	srv, err := console.New(ccfg, console.Deps{Store: ch.Console(), RuleStates: states,
		Rules: func() []rules.Rule { return []rules.Rule{unusual} }, Logger: logger, Registry: prometheus.NewRegistry()})
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
	p := br.NewPage(t)

	// The page, over 7 days: the band, and the episode on the line.
	if st := p.Goto(base + "/page?" + url.Values{"site": {"example.com"}, "path": {"/pricing"}, "range": {"7d"}}.Encode()); st != http.StatusOK {
		t.Fatalf("GET /page: %d", st)
	}
	if d, _ := p.Attr("svg[data-testid=chart] [data-testid=chart-band]", "d"); !strings.HasPrefix(d, "M") || strings.Count(d, "L") < 100 {
		t.Errorf("/page: band %.60q: not drawn over the week", d)
	}
	if got := p.Text("[data-testid=chart-band-legend]"); !strings.Contains(got, "unusual: the page's usual range") {
		t.Errorf("/page: band legend %q", got)
	}
	var events, labels, legend []string
	p.Eval(`() => [...document.querySelectorAll('svg[data-testid=chart] [data-testid=chart-episode]')].map(e => e.dataset.event)`, nil, &events)
	p.Eval(`() => [...document.querySelectorAll('svg[data-testid=chart] [data-testid=chart-episode-label]')].map(e => e.textContent)`, nil, &labels)
	p.Eval(`() => [...document.querySelectorAll('[data-testid=chart-mark]')].map(e => e.textContent)`, nil, &legend)
	if fmt.Sprint(events) != "[fire escalate resolve]" || fmt.Sprint(labels) != "[fire escalate ×3 resolve]" {
		t.Errorf("/page: episode marks %q labelled %q, want fire, escalate ×3, resolve", events, labels)
	}
	if len(legend) != 3 || !strings.Contains(legend[0], "unusual fired at ") || !strings.Contains(legend[0], "590 views in 1h, usual 70–125") ||
		!strings.Contains(legend[1], "unusual escalated at ") || !strings.Contains(legend[2], "unusual resolved at ") || !strings.Contains(legend[2], "peak 740") {
		t.Errorf("/page: episodes in the legend %q", legend)
	}
	// The crossings table says what each was judged against, not a
	// threshold of 0.
	var judged []string
	p.Eval(`() => [...document.querySelectorAll('[data-testid=crossing] [data-testid=judged]')].map(e => e.textContent)`, nil, &judged)
	if want := "[resolved, peak 740 escalated ×3, usual 85–140 above usual 70–125]"; fmt.Sprint(judged) != want {
		t.Errorf("/page: crossings judged %q, want %s", judged, want)
	}
	// docs/console-page.png is the demo's page (deploy/demo_browser_test.go).
	p.Screenshot("page-band-episodes")

	// The history says the same of each crossing.
	if st := p.Goto(base + "/history?" + url.Values{"rule": {"unusual"}}.Encode()); st != http.StatusOK {
		t.Fatalf("GET /history: %d", st)
	}
	judged = nil
	p.Eval(`() => [...document.querySelectorAll('[data-testid=crossing] [data-testid=judged]')].map(e => e.textContent)`, nil, &judged)
	if want := "[resolved, peak 740 escalated ×3, usual 85–140 above usual 70–125]"; fmt.Sprint(judged) != want {
		t.Errorf("/history: crossings judged %q, want %s", judged, want)
	}
	p.Screenshot("history-judged")

	// The live view: the surge against the page's normal for this hour.
	if st := p.Goto(base + "/live"); st != http.StatusOK {
		t.Fatalf("GET /live: %d", st)
	}
	ratio := p.Text(`[data-testid=live-row][data-path="/pricing"] [data-testid=ratio]`)
	if !regexp.MustCompile(`^[0-9.,]+× normal$`).MatchString(ratio) {
		t.Errorf("/live: /pricing against normal %q, want \"N× normal\"", ratio)
	}
	if n := p.Text(`[data-testid=live-row][data-path="/pricing"] [data-testid=baseline]`); n == "–" || n == "0" {
		t.Errorf("/live: /pricing's normal hour %q", n)
	}
	p.Screenshot("live-normal")

	// The rules page: the page's count against its usual range, its
	// episode open.
	if st := p.Goto(base + "/rules"); st != http.StatusOK {
		t.Fatalf("GET /rules: %d", st)
	}
	row := `[data-testid=rule][data-rule=unusual] [data-testid=rule-page][data-path="/pricing"] `
	if got := p.Text(row + "[data-testid=rule-page-usual]"); !regexp.MustCompile(`^usual [0-9,]+–[0-9,]+$`).MatchString(got) {
		t.Errorf("/rules: /pricing %q, want \"usual A–B\"", got)
	}
	launchRow := `[data-testid=rule][data-rule=unusual] [data-testid=rule-page][data-path="/launch"] `
	if got := p.Text(launchRow + "[data-testid=rule-page-usual]"); !regexp.MustCompile(`^usual 0–[0-9]+$`).MatchString(got) {
		t.Errorf("/rules: /launch, new on a site with weeks of data, %q: want \"usual 0–N\", the zeros the sweep judges it by", got)
	}
	if got := p.Text(row + "[data-testid=rule-page-count]"); got != "700 views" {
		t.Errorf("/rules: /pricing's count %q, want 700 views", got)
	}
	if got := p.Text(row + "[data-testid=rule-page-state]"); !strings.HasPrefix(got, "episode open since ") {
		t.Errorf("/rules: /pricing's state %q", got)
	}
	// Far above its range with no episode (no sweeper ran here): not
	// "normal".
	if got := p.Text(launchRow + "[data-testid=rule-page-state]"); got != "above its usual range, no episode" {
		t.Errorf("/rules: /launch's state %q, want above its usual range, no episode", got)
	}
	p.Screenshot("rules-usual")
}
