package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/console"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/internal/testserver/browsertest"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/pipeline/sweep/pagestate"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

// A page that rose for good, in Chromium over a real ClickHouse: five
// weeks of /guide's hours, 3 × its rhythm from six days ago (the
// sweeper told the rise, then "has stayed up: a new level" two days on),
// and a surge on top of the new level two days ago. Every view of the
// console reads the page as the sweep judges it, at its new level: the
// chart's band follows the line up, the marks and the crossings name the
// level, the rules page has the page inside its usual range ("normal at
// its new level"), not "above its usual range, no episode", and the live
// view has it near 1 × its normal, not at 3 ×.
func TestNewLevelInBrowser(t *testing.T) {
	br := browsertest.Start(t)
	chs := clickhousetest.Start(t)
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	cfg := clickhouse.DefaultConfig()
	cfg.Addr, cfg.Database = []string{chs.Addr}, "pw_level"
	ch, err := clickhouse.Open(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	if _, err := ch.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	const level = 3.0
	now := time.Now().UTC()
	hour := now.Truncate(time.Hour)
	day := 24 * time.Hour
	rise := hour.Add(-6 * day).Truncate(day).Add(10 * time.Hour)
	set := rise.Add(2 * day)
	topFrom := hour.Add(-2 * day).Truncate(day).Add(12 * time.Hour)
	topTo := topFrom.Add(3 * time.Hour)
	views := func(h time.Time) uint64 {
		n := float64(rhythm(h))
		if !h.Before(rise) {
			n *= level
		}
		if !h.Before(topFrom) && h.Before(topTo) {
			n *= 3
		}
		return uint64(n)
	}
	var rows []string
	seq := uint64(1_000_000)
	for h := hour.Add(-35 * day); h.Before(hour); h = h.Add(time.Hour) {
		seq++
		rows = append(rows, fmt.Sprintf("('example.com', '/guide', %d, %d, %d)", h.Unix(), seq, views(h)))
	}
	chs.Query(t, "INSERT INTO pw_level.page_minutes (site, path, minute, seq, hits) VALUES "+strings.Join(rows, ", "))
	// The last 50 minutes as raw hits, at the page's new level: what the
	// live view and the rules page count.
	start := now.Add(-50 * time.Minute)
	recent := int(float64(views(hour)) * 50 / 60)
	last, _, _ := classHits(1, "/guide", start, 49*time.Minute, []seedClass{{class: hit.ClassHuman, hits: recent, clients: 200, firstKey: 1}})
	if err := ch.Hits().InsertHits(ctx, []hit.Batch{last}); err != nil {
		t.Fatal(err)
	}

	// The rise, its new level, and the surge on top, as the sweep
	// records them (their whys as domain/rules writes them).
	key := "unusual.example.com./guide."
	since := rise.Format(time.RFC3339)
	crossings := []struct {
		key  string
		at   time.Time
		hits uint64
		why  string
	}{
		{key + "1", rise.Add(55 * time.Minute), views(rise), fmt.Sprintf(`{"kind":"unusual","count":%d,"baseline":100,"low":70,"high":140,"days":35,"weekly":true,"direction":"up"}`, views(rise))},
		{key + "1.resolved", set.Add(5 * time.Minute), views(set), fmt.Sprintf(`{"kind":"unusual","count":%d,"baseline":100,"low":70,"high":140,"direction":"up","new_normal":true,"raised":%g,"raised_since":%q}`,
			views(set), level, since)},
		{key + "2", topFrom.Add(55 * time.Minute), views(topFrom), fmt.Sprintf(`{"kind":"unusual","count":%d,"baseline":250,"low":180,"high":350,"days":35,"weekly":true,"direction":"up","raised":%g,"raised_since":%q}`,
			views(topFrom), level, since)},
		{key + "2.resolved", topTo.Add(65 * time.Minute), views(topTo.Add(time.Hour)), fmt.Sprintf(`{"kind":"unusual","count":%d,"baseline":250,"low":180,"high":350,"peak":%d,"raised":%g,"raised_since":%q}`,
			views(topTo.Add(time.Hour)), views(topFrom.Add(time.Hour)), level, since)},
	}
	for _, x := range crossings {
		chs.Query(t, fmt.Sprintf(`INSERT INTO pw_level.crossings (crossing_key, rule, site, path, window_text, threshold, hits, crossed_at)
VALUES ('%s', 'unusual', 'example.com', '/guide', '1h', 0, %d, %d)`, x.key, x.hits, x.at.Unix()))
		chs.Query(t, fmt.Sprintf(`INSERT INTO pw_level.crossing_whys (crossing_key, crossed_at, why) VALUES ('%s', %d, '%s')`, x.key, x.at.Unix(), x.why))
	}

	unusual := rules.Rule{Name: "unusual", Site: "example.com", Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"),
		Unusual: &rules.Unusual{}, Notify: rules.Notify{Recipients: []string{"a@example.com"}}}
	if err := unusual.Validate("rules"); err != nil {
		t.Fatal(err)
	}
	// The sweeper's state: no episode open, the page at its new level.
	states := sweeperStates(t, map[[2]string]pagestate.State{{"unusual", "/guide"}: {State: rules.State{
		Episode: 2, LastFired: topFrom.Add(55 * time.Minute),
		Raised: &rules.Raised{Steps: []rules.LevelStep{{Since: rise, Ratio: level, Set: set}}, Episode: 1}}}})
	base := serveConsole(t, console.Deps{Store: ch.Console(), RuleStates: states, Rules: func() []rules.Rule { return []rules.Rule{unusual} }})
	p := br.NewPage(t)

	// The page over 7 days: the rise, its new level and the surge on
	// top, each marked; the band at the level from when it was set.
	if st := p.Goto(base + "/page?" + url.Values{"site": {"example.com"}, "path": {"/guide"}, "range": {"7d"}}.Encode()); st != http.StatusOK {
		t.Fatalf("GET /page: %d", st)
	}
	var events, legend, judged []string
	p.Eval(`() => [...document.querySelectorAll('svg[data-testid=chart] [data-testid=chart-episode]')].map(e => e.dataset.event)`, nil, &events)
	p.Eval(`() => [...document.querySelectorAll('[data-testid=chart-mark]')].map(e => e.textContent)`, nil, &legend)
	if fmt.Sprint(events) != "[fire resolve fire resolve]" {
		t.Errorf("/page: episode marks %q, want the rise, its level, the surge on top and its end", events)
	}
	if len(legend) != 4 || !strings.Contains(legend[1], "not back") || !strings.Contains(legend[1], "a new level at 3× its normal") {
		t.Errorf("/page: episodes in the legend %q: want the rise's resolve to name its new level", legend)
	}
	p.Eval(`() => [...document.querySelectorAll('[data-testid=crossing] [data-testid=judged]')].map(e => e.textContent)`, nil, &judged)
	// Newest first.
	want := "[resolved, peak " + traffic.FormatCount(views(topFrom.Add(time.Hour))) + " above usual 180–350, at its new level (3× its old) resolved, not back: a new level at 3× its normal above usual 70–140]"
	if fmt.Sprint(judged) != want {
		t.Errorf("/page: crossings judged %q,\nwant %s", judged, want)
	}
	// The band, as the page's JSON gives it: under the line from the
	// rise until the level was set (the rise was told), around it from
	// then (the page judged at its level), the surge on top above it.
	var band struct {
		Series []struct {
			T     time.Time `json:"t"`
			Views uint64    `json:"views"`
		} `json:"series"`
		Band struct {
			Points []struct {
				T         time.Time `json:"t"`
				Low, High float64
			} `json:"points"`
		} `json:"band"`
	}
	p.Eval(`(u) => fetch(u).then(r => r.json())`, "/api/v1/page?"+url.Values{"site": {"example.com"}, "path": {"/guide"}, "range": {"7d"}}.Encode(), &band)
	line := map[time.Time]float64{}
	for _, pt := range band.Series {
		line[pt.T] = float64(pt.Views)
	}
	var above, inside, atLevel int
	for _, pt := range band.Band.Points {
		v, ok := line[pt.T]
		switch end := pt.T.Add(time.Hour); {
		case !ok || end.Before(rise.Add(2*time.Hour)) || !end.Before(hour) || (!pt.T.Before(topFrom) && pt.T.Before(topTo)):
		case end.Before(set):
			if v > pt.High {
				above++
			}
		default:
			atLevel++
			if pt.Low <= v && v <= pt.High {
				inside++
			}
		}
	}
	if above < 30 {
		t.Errorf("/page: the line above its band on %d hours of the 46 before its level was set: want the rise drawn as one", above)
	}
	if atLevel < 50 || inside < atLevel*9/10 {
		t.Errorf("/page: the line inside its band on %d of %d hours at its new level: want it drawn at the level", inside, atLevel)
	}
	p.Screenshot("page-new-level")

	// The rules page: /guide inside its usual range, at its level.
	if st := p.Goto(base + "/rules"); st != http.StatusOK {
		t.Fatalf("GET /rules: %d", st)
	}
	row := `[data-testid=rule][data-rule=unusual] [data-testid=rule-page][data-path="/guide"] `
	usual := p.Text(row + "[data-testid=rule-page-usual]")
	m := regexp.MustCompile(`^usual ([0-9,]+)–([0-9,]+)$`).FindStringSubmatch(usual)
	count := uint64(recent)
	if m == nil || parseCount(t, m[1]) > count || parseCount(t, m[2]) < count {
		t.Errorf("/rules: /guide's %d views %q: want a usual range holding them, at its new level", count, usual)
	}
	if got := p.Text(row + "[data-testid=rule-page-state]"); !strings.HasPrefix(got, "normal at its new level: 3× its old, since ") {
		t.Errorf("/rules: /guide's state %q, want normal at its new level", got)
	}
	p.Screenshot("rules-new-level")

	// The live view: near its normal, not 3 × it.
	if st := p.Goto(base + "/live"); st != http.StatusOK {
		t.Fatalf("GET /live: %d", st)
	}
	ratio := p.Text(`[data-testid=live-row][data-path="/guide"] [data-testid=ratio]`)
	rm := regexp.MustCompile(`^([0-9.]+)× normal$`).FindStringSubmatch(ratio)
	if rm == nil {
		t.Fatalf("/live: /guide against normal %q, want \"N× normal\"", ratio)
	}
	if r, _ := strconv.ParseFloat(rm[1], 64); r < 0.5 || r > 1.5 {
		t.Errorf("/live: /guide at %q: want near 1 × its normal at its new level, not %g × its old", ratio, level)
	}
	if from, _ := p.Attr(`[data-testid=live-row][data-path="/guide"] [data-testid=baseline]`, "title"); !strings.HasSuffix(from, ", at its new level (3× its old)") {
		t.Errorf("/live: /guide's normal from %q: want it to say it is at its new level", from)
	}
	p.Screenshot("live-new-level")
}

func parseCount(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(strings.ReplaceAll(s, ",", ""), 10, 64)
	if err != nil {
		t.Fatalf("count %q: %v", s, err)
	}
	return n
}
