package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

func classCount(class string, hits uint64, counted bool, clients uint64) ClassCount {
	return ClassCount{ClassHits: traffic.ClassHits{Class: class, Hits: hits, Counted: counted}, Clients: clients}
}

// Counted classes come first, each part in a fixed order; every class
// has a row, zeros included; the bar's segments follow each other and
// end at its width; a class counted only in part says so.
func TestClassShares(t *testing.T) {
	if classShares(nil) != nil {
		t.Error("no counts: want no view")
	}
	v := classShares([]ClassCount{classCount("bot", 300, false, 3), classCount("human", 600, true, 200),
		classCount("ai_crawler", 50, false, 1), classCount("ai_crawler", 50, true, 1)})
	var got []string
	for _, c := range v.Classes {
		got = append(got, fmt.Sprintf("%s %d %s %s", c.Class, c.Hits, c.ShareShown, c.CountedShown))
	}
	want := "[human 600 60% views|ai_agent 0 0% —|unknown 0 0% —|ai_crawler 100 10% partly: 50 views|bot 300 30% not counted]"
	if s := "[" + strings.Join(got, "|") + "]"; s != want {
		t.Errorf("classes %s\nwant    %s", s, want)
	}
	var x float64
	for _, c := range v.Classes {
		if c.X != x {
			t.Errorf("%s starts at %.1f, want %.1f", c.Class, c.X, x)
		}
		x += c.W
	}
	if x < barWidth-0.01 || x > barWidth+0.01 || v.Divide != 700 {
		t.Errorf("the bar ends at %.1f (want %d), counted part at %.1f (want 700)", x, barWidth, v.Divide)
	}
	if v.ViewsShown != "650 of 1,000 hits (65%)" || v.NotCountedShown != "350 (35%)" {
		t.Errorf("split %q, %q", v.ViewsShown, v.NotCountedShown)
	}
	for _, c := range []struct {
		v    float64
		want string
	}{{0, "0%"}, {0.004, "0.4%"}, {0.0996, "10.0%"}, {0.5, "50%"}, {1, "100%"}} {
		if got := sharePct(c.v); got != c.want {
			t.Errorf("sharePct(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// The page view: views and visitors drawn and named in the legend, the
// class shares as a bar and a table, numbers with separators, and the
// API's series with visitors per step.
func TestPageShowsVisitorsAndClasses(t *testing.T) {
	b := setup(t, nil)
	now := time.Date(2026, 11, 24, 12, 0, 30, 0, time.UTC)
	b.store.series = []traffic.MinuteHits{{Minute: now.Add(-10 * time.Minute).Truncate(time.Minute), Hits: 32260}}
	b.store.visitors = []traffic.MinuteHits{{Minute: now.Add(-10 * time.Minute).Truncate(time.Minute), Hits: 1200}}
	b.store.classes = []ClassCount{classCount("human", 30000, true, 1100), classCount("bot", 5000, false, 40),
		classCount("unknown", 2260, true, 0), classCount("ai_agent", 0, true, 0)}
	alice, resp, _ := b.login(t, "alice", "pw-alice")
	_ = resp.Body.Close()
	q := url.Values{"site": {"example.com"}, "path": {"/pricing"}}.Encode()
	body := bodyOf(t, alice, b.srv.URL+"/page?"+q)
	for _, want := range []string{
		`<span data-testid="page-total">32,260</span> views`,
		`<path class="series-visitors" data-testid="chart-visitors" d="M`,
		`data-testid="chart-legend-visitors">visitors per minute`,
		`data-testid="class-bar"`, `<rect class="seg class-human" x="0.0" width="805.2"`,
		`<rect class="seg class-bot uncounted"`,
		`data-class="human"`, `<td class="num" data-testid="class-hits">30,000</td>`, `data-testid="class-clients">1,100<`,
		// unknown hits without client keys: a dash, not 0 clients
		`data-testid="class-clients">—<`,
		`Counted as views: <strong>32,260 of 37,260 hits (87%)</strong>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if n := strings.Count(body, `data-testid="class"`); n != 5 {
		t.Errorf("%d class rows, want the 5 classes", n)
	}
	api := bodyOf(t, alice, b.srv.URL+"/api/v1/page?"+q)
	var v struct {
		Series []struct {
			Views, Visitors uint64
		}
		Classes struct {
			Views   uint64
			Classes []struct{ Class string }
		}
	}
	if err := json.Unmarshal([]byte(api), &v); err != nil {
		t.Fatalf("%v\n%s", err, api)
	}
	var views, visitors uint64
	for _, p := range v.Series {
		views, visitors = views+p.Views, visitors+p.Visitors
	}
	if views != 32260 || visitors != 1200 || v.Classes.Views != 32260 || len(v.Classes.Classes) != 5 {
		t.Errorf("API: %d views, %d visitors, classes %+v", views, visitors, v.Classes)
	}
	// No visitors: no line of them, and the legend says why.
	b.store.classes, b.store.visitors = nil, nil
	body = bodyOf(t, alice, b.srv.URL+"/page?"+q)
	if !strings.Contains(body, `data-testid="classes-none"`) || strings.Contains(body, `data-testid="class-bar"`) ||
		strings.Contains(body, `data-testid="chart-visitors"`) || !strings.Contains(body, "no visitors in this range") {
		t.Errorf("page without class counts or visitors:\n%s", body)
	}
}

// bodyOf is get's body (get has read and closed it).
func bodyOf(t *testing.T, c *http.Client, u string) string {
	resp, body := get(t, c, u)
	_ = resp.Body.Close()
	return body
}

// heldReason is what fakeStates holds hostileImg's surge for.
const heldReason = "mostly one client: 97% of 1,204 views <b>x</b>"

// A surge the client guard holds shows on the page view as a note, and
// on the live view as a badge beside the page, its reason as text.
func TestHeldSurgeShown(t *testing.T) {
	b := setup(t, nil)
	alice, resp, _ := b.login(t, "alice", "pw-alice")
	_ = resp.Body.Close()
	body := bodyOf(t, alice, b.srv.URL+"/page?"+url.Values{"site": {"example.com"}, "path": {hostileImg}}.Encode())
	if want := `<p class="held-note" data-testid="held" data-rule="any">Held, not alerted: <strong>any</strong> would fire, but mostly one client: 97% of 1,204 views &lt;b&gt;x&lt;/b&gt;.</p>`; !strings.Contains(body, want) {
		t.Errorf("page view lacks %s", want)
	}
	if body := bodyOf(t, alice, b.srv.URL+"/page?"+url.Values{"site": {"example.com"}, "path": {"/pricing"}}.Encode()); strings.Contains(body, `class="held-note"`) {
		t.Error("/pricing's page view shows a held surge")
	}
	body = bodyOf(t, alice, b.srv.URL+"/live")
	if want := `<span class="held" data-testid="held" title="any: mostly one client: 97% of 1,204 views &lt;b&gt;x&lt;/b&gt;">held: mostly one client</span>`; !strings.Contains(body, want) {
		t.Errorf("live view lacks %s\n%s", want, body)
	}
	if n := strings.Count(body, `data-testid="held" title="" hidden>`); n != 2 {
		t.Errorf("%d hidden held badges, want 2 (the pages without a held surge)", n)
	}
	if strings.Contains(body, "<b>x") {
		t.Error("the reason is not escaped")
	}
}
