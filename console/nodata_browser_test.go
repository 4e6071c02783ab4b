package console_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/console"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/internal/testserver/browsertest"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

// A site's "no data" episode in the history, over a real ClickHouse in
// Chromium: its fire, carrying what the tailers said of the site's logs
// (a tailer not heard from, a log not yet published, the loaders'
// backlog), and its resolve, recorded as the sweeper records them
// (History.RecordCrossings, the whys as JSON beside them), each with a
// notification sent. The history says of each what judgedText says, the
// tailer's and the log's names (written by whoever set the tailers up,
// markup and all) as text, and no script runs.
func TestNoDataInBrowserHistory(t *testing.T) {
	br := browsertest.Start(t)
	ch := historyStore(t, "pw_nodata")
	ctx := context.Background()

	const site = "shop.example.com"
	now := time.Now().UTC()
	// The site's newest minute three hours ago; the sweeper told of it 25
	// minutes later and of its data again 40 minutes ago.
	newest := now.Add(-3 * time.Hour).Truncate(time.Minute)
	fired, resolved := newest.Add(25*time.Minute), now.Add(-40*time.Minute).Truncate(time.Second)
	clock := func(t time.Time) string { return t.Format("15:04 UTC") }
	// As tailstatus.FeedsOf writes them: "<instance> on <host>, last
	// heard …" and "<instance>: <input>, <bytes> behind since …".
	silent := "web-<script>alert(1)</script> on host-a, last heard " + clock(newest.Add(time.Minute))
	behind := `web-2: /var/log/nginx/"shop" & co's <b>access</b>.log, ` + traffic.FormatBytes(3<<20) + " behind since " + clock(newest.Add(-5*time.Minute))
	feeds := &crossing.Feeds{Logs: 2, AtEnd: 1, Named: 1, Silent: []string{silent}, Behind: []string{behind}, Unloaded: 1234, At: fired}

	unusual := rules.Rule{Name: "unusual", Site: site, Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"),
		Unusual: &rules.Unusual{}, Notify: rules.Notify{Recipients: []string{"ops@example.com"}}}
	if err := unusual.Validate("rules"); err != nil {
		t.Fatal(err)
	}
	// The keys and crossings of pipeline/sweep's noDataCrossing, episode 4.
	key := "_nodata.unusual." + bus.Key(site, "") + ".4"
	noData := func(key, event string, at time.Time, f *crossing.Feeds) crossing.Crossing {
		return crossing.Crossing{Key: key, Rule: unusual.Name, Site: site, CrossedAt: at, Event: event,
			Recipients: unusual.Notify.Recipients, Why: &crossing.Why{Kind: crossing.KindNoData, Since: newest, Feeds: f}}
	}
	fire, resolve := noData(key, string(rules.EventFire), fired, feeds), noData(key+".resolved", string(rules.EventResolve), resolved, nil)
	// A page's crossing beside them, for the eye: a row with a page,
	// window and count.
	page := crossing.Crossing{Key: "unusual." + site + "./pricing.3", Rule: unusual.Name, Site: site, Path: "/pricing", Window: "1h",
		Count: 590, CrossedAt: now.Add(-5 * time.Hour).Truncate(time.Second), Event: string(rules.EventFire),
		Why: &crossing.Why{Kind: "unusual", Count: 590, Baseline: 95, Low: 70, High: 125, Days: 35, Weekly: true, Direction: "up"}}
	if err := ch.History().RecordCrossings(ctx, []crossing.Crossing{page, fire, resolve}); err != nil {
		t.Fatal(err)
	}
	var sent []crossing.Record
	for _, x := range []crossing.Crossing{page, fire, resolve} {
		sent = append(sent, crossing.Record{At: x.CrossedAt.Add(3 * time.Second), Crossing: x, Outcome: crossing.Sent, SMTPCode: 250, Worker: "worker-1"})
	}
	if err := ch.History().RecordNotifications(ctx, sent); err != nil {
		t.Fatal(err)
	}

	base := serveConsole(t, console.Deps{Store: ch.Console(), Rules: func() []rules.Rule { return []rules.Rule{unusual} }})
	p := br.NewPage(t)
	if st := p.Goto(base + "/history?" + url.Values{"site": {site}}.Encode()); st != http.StatusOK {
		t.Fatalf("GET /history: %d", st)
	}
	since := newest.Format("15:04 UTC, 2 Jan")
	row := func(key string) string { return `[data-testid=crossing][data-key="` + key + `"]` }
	for _, c := range []struct{ key, judged string }{
		{fire.Key, "no data since " + since + "; not heard from: " + silent + "; not yet published: " + behind +
			"; the loaders have 1,234 hits of all sites not yet stored"},
		{resolve.Key, "data again, none since " + since},
	} {
		if got := p.Text(row(c.key) + " [data-testid=judged]"); got != c.judged {
			t.Errorf("/history: %s judged\n%q, want\n%q", c.key, got, c.judged)
		}
		// The row as read: its rule, site and notification around it.
		if got := p.Text(row(c.key)); !strings.Contains(got, c.judged) || !strings.Contains(got, "unusual") ||
			!strings.Contains(got, site) || !strings.Contains(got, "sent 250") {
			t.Errorf("/history: %s reads %q", c.key, got)
		}
		// No page, window or count: said so, not an empty link (reached
		// by the keyboard, read out by a screen reader) nor a count of 0.
		if got := p.Text(row(c.key) + " [data-testid=page]"); got != "whole site" {
			t.Errorf("/history: %s page %q, want whole site", c.key, got)
		}
		if n := p.Count(row(c.key) + " a:not([href^='/history?'])"); n != 0 {
			t.Errorf("/history: %s has %d links but its rule's", c.key, n)
		}
		for _, cell := range []string{"window", "count"} {
			if got := p.Text(row(c.key) + " [data-testid=" + cell + "]"); got != "–" {
				t.Errorf("/history: %s %s %q, want –", c.key, cell, got)
			}
		}
	}
	if got := p.Text(row(page.Key) + " [data-testid=judged]"); got != "above usual 70–125" {
		t.Errorf("/history: the page's crossing judged %q, want above usual 70–125", got)
	}
	// The page's crossing as before: its page linked, its window and count.
	link := "/page?" + url.Values{"site": {site}, "path": {"/pricing"}}.Encode()
	if href, _ := p.Attr(row(page.Key)+" [data-testid=page] a", "href"); href != link {
		t.Errorf("/history: the page's crossing links %q, want %q", href, link)
	}
	for cell, want := range map[string]string{"page": "/pricing", "window": "1h", "count": "590"} {
		if got := p.Text(row(page.Key) + " [data-testid=" + cell + "]"); got != want {
			t.Errorf("/history: the page's crossing %s %q, want %q", cell, got, want)
		}
	}
	// The names' markup is text: nothing of it became an element (a
	// dialog or a script's error would fail the step already).
	if n := p.Count(`[data-testid=judged] script, [data-testid=judged] b, [data-testid=crossing] script`); n != 0 {
		t.Errorf("/history: %d elements made of the tailers' names", n)
	}
	if got := p.HTML(row(fire.Key) + " [data-testid=judged]"); !strings.Contains(got, "web-&lt;script&gt;alert(1)&lt;/script&gt;") ||
		!strings.Contains(got, "&amp; co's &lt;b&gt;access&lt;/b&gt;.log") {
		t.Errorf("/history: the fire's judged HTML %q does not hold the names escaped", got)
	}
	p.Check()
	if d := p.Dialogs(); len(d) != 0 {
		t.Errorf("/history: dialogs %q", d)
	}
	p.Screenshot("history-no-data")

	// In a narrow window the table scrolls inside the page, not the page
	// sideways under a top bar cut at the window's width.
	narrow := br.NewPageWith(t, browsertest.PageOptions{Width: 760, Height: 800})
	if st := narrow.Goto(base + "/history?" + url.Values{"site": {site}}.Encode()); st != http.StatusOK {
		t.Fatalf("/history at 760 px: %d", st)
	}
	var widths struct{ Page, Window, Header float64 }
	// clientWidth, not innerWidth: a browser with scrollbars counts the
	// vertical one in innerWidth and not in the page or its top bar.
	narrow.Eval(`() => ({Page: document.documentElement.scrollWidth, Window: document.documentElement.clientWidth, Header: document.querySelector("header").getBoundingClientRect().width})`, nil, &widths)
	if widths.Page > widths.Window || widths.Header < widths.Window {
		t.Errorf("at 760 px: the page %v px wide, the window %v, its top bar %v", widths.Page, widths.Window, widths.Header)
	}
	narrow.Screenshot("history-no-data-760")
}

// historyStore is a migrated database of a real ClickHouse, closed when
// the test ends.
func historyStore(t *testing.T, db string) *clickhouse.Client {
	t.Helper()
	chs := clickhousetest.Start(t)
	cfg := clickhouse.DefaultConfig()
	cfg.Addr, cfg.Database = []string{chs.Addr}, db
	ch, err := clickhouse.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(t.Output(), nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	if _, err := ch.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ch
}

// serveConsole runs a console over deps (a logger and registry of its
// own unless set), without logins, on a loopback port until the test
// ends, and returns its address.
func serveConsole(t *testing.T, deps console.Deps) string {
	t.Helper()
	cfg := console.DefaultConfig()
	cfg.Auth, cfg.Listen = console.AuthNone, "127.0.0.1:0"
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	if deps.Registry == nil {
		deps.Registry = prometheus.NewRegistry()
	}
	srv, err := console.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + srv.Addr()
}
