package sweep

import (
	"context"
	"maps"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// A sweep learns each site's clocks from ClickHouse, as a backtest does
// from its rows: four days after America's clocks went forward, the site
// whose evenings moved with them is read on New York's, the one whose
// evenings stayed put on UTC's; the spans of the first are New York's
// wall-clock hours, and its surge's why says so.
func TestSweepLearnsEachSitesClocks(t *testing.T) {
	b := setup(t)
	shipped, err := LoadRules(Config{RulesPath: "../../deploy/rules/spike-default.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	b.cfg.Rules = shipped
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	change := time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)
	from, to := change.Add(-15*24*time.Hour), change.Add(4*24*time.Hour)
	b.seq++
	batch := hit.Batch{Seq: b.seq}
	for h := from; h.Before(to); h = h.Add(time.Hour) {
		for site, loc := range map[string]*time.Location{"ny.example": ny, "utc.example": time.UTC} {
			// Quiet nights, busiest at 20:00 on the readers' clocks.
			x := float64(h.In(loc).Hour())
			n := int(20 + 180*math.Exp(-(x-20)*(x-20)/16))
			for i := range n {
				batch.Hits = append(batch.Hits, hit.Hit{Time: h.Add(time.Duration(i%60) * time.Minute), Site: site, Path: "/", Offset: uint64(len(batch.Hits))})
			}
		}
	}
	// And a surge on both in the last half hour: its why names the clocks.
	for _, site := range []string{"ny.example", "utc.example"} {
		for i := range 3000 {
			batch.Hits = append(batch.Hits, hit.Hit{Time: to.Add(-30*time.Minute + time.Duration(i%30)*time.Minute), Site: site, Path: "/", Offset: uint64(len(batch.Hits))})
		}
	}
	if err := b.ch.Hits().InsertHits(context.Background(), []hit.Batch{batch}); err != nil {
		t.Fatal(err)
	}
	s := b.sweeper(t, &clock{t: to.Add(5 * time.Minute)})
	b.sweep(t, s)

	s.baselines.mu.Lock()
	clocks := s.baselines.clocks
	s.baselines.mu.Unlock()
	if got := clocks["ny.example"]; got == nil || got.String() != "America/New_York" {
		t.Errorf("ny.example is read on %v, want America/New_York", got)
	}
	if got, ok := clocks["utc.example"]; ok {
		t.Errorf("utc.example is read on %v, want UTC's (none learned)", got)
	}
	for zone, want := range map[string]float64{"America/New_York": 1, "Europe/Berlin": 0} {
		if got := testutil.ToFloat64(s.metrics.sitesOnClocks.WithLabelValues(zone)); got != want {
			t.Errorf("pagewatch_sweeper_sites_on_learned_clocks{zone=%q} = %v, want %v", zone, got, want)
		}
	}
	whys := map[string]string{}
	for _, x := range b.jobs(t) {
		if x.Event == "fire" {
			whys[x.Site] = x.Why.Clock
		}
	}
	if want := map[string]string{"ny.example": "America/New_York", "utc.example": ""}; !maps.Equal(whys, want) {
		t.Errorf("the surges' whys read clocks %q, want %q", whys, want)
	}
	r := &shipped[0]
	end := to.Add(5 * time.Minute)
	spans := rules.SpansOn(r, end, from, clocks["ny.example"])
	for _, sp := range spans {
		if sp.To.Before(change) && sp.OfWindow() {
			if h := sp.To.In(ny).Hour(); h != end.In(ny).Hour() && h != end.In(ny).Add(time.Hour).Hour() {
				t.Errorf("span %v before the change ends at %d:00 in New York, want the hour of %s there", sp, h, end.In(ny).Format("15:04"))
			}
		}
	}
}
