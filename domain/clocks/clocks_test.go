package clocks_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/clocks"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// site is a site's views per UTC hour: a weekday with a morning rise and
// an evening peak on its readers' clocks (loc), weekends at 60 %, days
// whose level varies by 10 %, and Poisson's noise; peak views an hour at
// its busiest. From its first hour on, every hour before now is known.
type site struct {
	views map[time.Time]float64
	first time.Time
}

func newSite(loc *time.Location, peak float64, from, to time.Time, seed uint64) site {
	rng := rand.New(rand.NewPCG(seed, 1))
	s := site{views: map[time.Time]float64{}, first: from}
	level := map[string]float64{}
	for h := from; h.Before(to); h = h.Add(time.Hour) {
		local := h.In(loc)
		day := local.Format("2006-01-02")
		if _, ok := level[day]; !ok {
			level[day] = math.Exp(0.1 * rng.NormFloat64())
		}
		// Quiet at night, rising from 7:00, busiest at 20:00.
		x := float64(local.Hour()) + float64(local.Minute())/60
		shape := 0.1 + 0.9*math.Exp(-(x-20)*(x-20)/16)
		if x < 7 {
			shape = 0.1
		}
		if wd := local.Weekday(); wd == time.Saturday || wd == time.Sunday {
			shape *= 0.6
		}
		s.views[h] = float64(poisson(rng, peak*shape*level[day]))
	}
	return s
}

func (s site) at(h time.Time) (float64, bool) { return s.views[h], !h.Before(s.first) }

func poisson(rng *rand.Rand, mean float64) int {
	if mean > 50 {
		return max(0, int(math.Round(mean+math.Sqrt(mean)*rng.NormFloat64())))
	}
	l, k, p := math.Exp(-mean), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

var (
	// America's clocks went forward at 07:00 UTC on 8 March 2026, the
	// EU's at 01:00 UTC on 29 March.
	usChange = time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)
	euChange = time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)
	from     = time.Date(2026, 2, 2, 0, 0, 0, 0, time.UTC)
	reach    = 13 * 7 * 24 * time.Hour
)

func TestChangesAreTheCandidatesOwn(t *testing.T) {
	got := map[string][]time.Time{}
	for _, ch := range clocks.Changes(from, from.Add(reach)) {
		got[ch.Clock.Name] = append(got[ch.Clock.Name], ch.At)
	}
	if us := got["America/New_York"]; len(us) != 1 || !us[0].Equal(usChange) {
		t.Errorf("New York's changes from 2 February, 13 weeks: %v, want [%v]", us, usChange)
	}
	if eu := got["Europe/Berlin"]; len(eu) != 1 || !eu[0].Equal(euChange) {
		t.Errorf("Berlin's: %v, want [%v]", eu, euChange)
	}
	if len(got) != len(clocks.Candidates) {
		t.Errorf("%d of %d candidates change within 13 weeks of February: %v", len(got), len(clocks.Candidates), got)
	}
}

func TestASiteOnNewYorksClocksIsLearnedWithinDaysOfTheChange(t *testing.T) {
	ny := zone(t, "America/New_York")
	for _, peak := range []float64{300, 30_000} {
		s := newSite(ny, peak, from, usChange.Add(8*24*time.Hour), 1)
		if v := clocks.Learn(s.at, usChange.Add(-time.Hour), reach, nil); v.Clock != clocks.UTC {
			t.Errorf("peak %g: before any change: %s, want UTC (nothing tells the clocks apart)", peak, v.Clock.Name)
		}
		if v := clocks.Learn(s.at, usChange.Add(6*time.Hour), reach, nil); v.Clock != clocks.UTC {
			t.Errorf("peak %g: 6 hours after the change: %s, want UTC (too little to tell)", peak, v.Clock.Name)
		}
		at := usChange.Add(3 * 24 * time.Hour)
		v := clocks.Learn(s.at, at, reach, nil)
		if v.Clock.Name != "America/New_York" {
			t.Fatalf("peak %g: 3 days after the change: %s (z %.1f), want America/New_York", peak, v.Clock.Name, v.Evidence.Z)
		}
		if v.Evidence.Pairs < 24 || v.Evidence.Z < 4 {
			t.Errorf("peak %g: evidence %+v", peak, v.Evidence)
		}
	}
}

func TestASiteOnUTCStaysThereAndEveryOtherClockReadsWorse(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		s := newSite(time.UTC, 3000, from, from.Add(reach), seed)
		now := from.Add(reach)
		for _, ch := range clocks.Changes(now.Add(-reach), now) {
			if ev := clocks.Weigh(s.at, ch, now); ev.Z > 0 {
				t.Errorf("seed %d: %s's change of %s reads better than UTC: z %.1f", seed, ch.Clock.Name, ch.At, ev.Z)
			}
		}
		if v := clocks.Learn(s.at, now, reach, nil); v.Clock != clocks.UTC {
			t.Errorf("seed %d: learned %s", seed, v.Clock.Name)
		}
	}
}

func TestAFlatOrTinySiteTellsNothing(t *testing.T) {
	flat := site{views: map[time.Time]float64{}, first: from}
	rng := rand.New(rand.NewPCG(7, 7))
	for h := from; h.Before(from.Add(reach)); h = h.Add(time.Hour) {
		flat.views[h] = float64(poisson(rng, 200))
	}
	tiny := newSite(zone(t, "America/New_York"), 2, from, from.Add(reach), 3)
	for name, s := range map[string]site{"flat": flat, "two views an hour at its busiest": tiny} {
		if v := clocks.Learn(s.at, usChange.Add(7*24*time.Hour), reach, nil); v.Clock != clocks.UTC {
			t.Errorf("%s: learned %s (z %.1f)", name, v.Clock.Name, v.Evidence.Z)
		}
	}
}

func TestAEuropeanSiteIsToldFromAnAmericanOne(t *testing.T) {
	berlin := zone(t, "Europe/Berlin")
	s := newSite(berlin, 3000, from, euChange.Add(8*24*time.Hour), 2)
	at := euChange.Add(7 * 24 * time.Hour)
	if v := clocks.Learn(s.at, at, reach, nil); v.Clock.Name != "Europe/Berlin" {
		t.Errorf("a week after the EU's change, with America's three weeks before it in reach: %s, want Europe/Berlin", v.Clock.Name)
	}
}

func TestAHolidayInTheWeekAfterTheChangeDoesNotHideIt(t *testing.T) {
	ny := zone(t, "America/New_York")
	s := newSite(ny, 3000, from, usChange.Add(8*24*time.Hour), 4)
	// Two days at 15 %, from the Tuesday after the change.
	for h := usChange.Add(2 * 24 * time.Hour); h.Before(usChange.Add(4 * 24 * time.Hour)); h = h.Add(time.Hour) {
		s.views[h] = math.Round(s.views[h] * 0.15)
	}
	if v := clocks.Learn(s.at, usChange.Add(7*24*time.Hour), reach, nil); v.Clock.Name != "America/New_York" {
		t.Errorf("learned %s (z %.1f), want America/New_York", v.Clock.Name, v.Evidence.Z)
	}
}

func TestEveryCandidateLoads(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range clocks.Candidates {
		if c.Loc == nil || seen[c.Name] {
			t.Errorf("candidate %q: loc %v, seen before %v", c.Name, c.Loc, seen[c.Name])
		}
		seen[c.Name] = true
	}
}

// A day that moves in two sharp steps (office hours, 9:00 to 17:00 on
// New York's clocks, with nothing else to go by) differs from its
// weeks before in two hours a day: few pairs, each far off on UTC's.
func TestOfficeHoursAreLearnedByTheirEdges(t *testing.T) {
	ny := zone(t, "America/New_York")
	s := site{views: map[time.Time]float64{}, first: from}
	for h := from; h.Before(usChange.Add(8 * 24 * time.Hour)); h = h.Add(time.Hour) {
		s.views[h] = 60
		if l := h.In(ny).Hour(); l >= 9 && l < 17 {
			s.views[h] = 600
		}
	}
	v := clocks.Learn(s.at, usChange.Add(6*24*time.Hour), reach, nil)
	if v.Clock.Name != "America/New_York" {
		t.Errorf("learned %s (z %.1f, ratio %.2f over %d pairs), want America/New_York", v.Clock.Name, v.Evidence.Z, v.Evidence.Ratio(), v.Evidence.Pairs)
	}
}

// reader is a Learner's source over a site's hours, counting its reads;
// while down, its reads fail.
type reader struct {
	s     site
	name  string
	reads int
	down  bool
}

func (r *reader) SiteHours(_ context.Context, from, to time.Time) ([]traffic.SiteHour, error) {
	r.reads++
	if r.down {
		return nil, errors.New("clickhouse: connection refused")
	}
	var out []traffic.SiteHour
	for h, n := range r.s.views {
		if !h.Before(from) && h.Before(to) && n > 0 {
			out = append(out, traffic.SiteHour{Site: r.name, Hour: h, Minutes: 60, Hits: uint64(n)})
		}
	}
	return out, nil
}

// A Learner reads a change's week again each hour while it lasts, and
// keeps what it said once the week is over.
func TestALearnerKeepsAChangesWeekOnceItIsOver(t *testing.T) {
	ny := zone(t, "America/New_York")
	src := &reader{s: newSite(ny, 3000, from, usChange.Add(9*24*time.Hour), 5), name: "ny.example"}
	l := clocks.NewLearner(src, nil)
	ctx := context.Background()
	at := func(now time.Time) map[string]*time.Location {
		t.Helper()
		of, err := l.At(ctx, now, reach)
		if err != nil {
			t.Fatal(err)
		}
		return of
	}
	isNY := func(of map[string]*time.Location) bool {
		return of["ny.example"] != nil && of["ny.example"].String() == ny.String()
	}
	if of := at(usChange.Add(3 * 24 * time.Hour)); !isNY(of) {
		t.Fatalf("3 days after the change: %v", of)
	}
	reads := src.reads
	at(usChange.Add(3*24*time.Hour + 30*time.Minute))
	if src.reads != reads {
		t.Errorf("read again within the hour: %d reads, was %d", src.reads, reads)
	}
	at(usChange.Add(8 * 24 * time.Hour))
	reads = src.reads
	if of := at(usChange.Add(9 * 24 * time.Hour)); !isNY(of) || src.reads != reads {
		t.Errorf("a day after the week: %v, %d reads (was %d): the week's evidence read again", of, src.reads, reads)
	}
}

// A Learner whose reads fail keeps what it learned, says why, and reads
// again within minutes, not an hour.
func TestALearnerThatCannotReadKeepsWhatItLearned(t *testing.T) {
	ny := zone(t, "America/New_York")
	src := &reader{s: newSite(ny, 3000, from, usChange.Add(9*24*time.Hour), 6), name: "ny.example"}
	l := clocks.NewLearner(src, nil)
	ctx := context.Background()
	at := usChange.Add(3 * 24 * time.Hour)
	if of, err := l.At(ctx, at, reach); err != nil || of["ny.example"] == nil {
		t.Fatalf("learning: %v, %v", of, err)
	}
	src.down = true
	of, err := l.At(ctx, at.Add(time.Hour), reach)
	if err == nil || !strings.Contains(err.Error(), "learning the sites' clocks: clickhouse: connection refused") {
		t.Errorf("a failed read: %v", err)
	}
	if of["ny.example"] == nil {
		t.Errorf("a failed read forgot what was learned: %v", of)
	}
	reads := src.reads
	_, _ = l.At(ctx, at.Add(time.Hour+time.Minute), reach)
	if src.reads != reads {
		t.Errorf("read again a minute after failing")
	}
	src.down = false
	if of, err := l.At(ctx, at.Add(time.Hour+6*time.Minute), reach); err != nil || of["ny.example"] == nil || src.reads == reads {
		t.Errorf("6 minutes after failing: %v, %v, %d reads (was %d)", of, err, src.reads, reads)
	}
}

// Clocks going back are learned as clocks going forward are, north and
// south: Berlin's in October, Sydney's in April and October. Where two
// candidates change hours apart (Israel's two hours before the EU's in
// October, Auckland's before Sydney's in April) the one more sites keep
// is learned: they differ only for the days between their other change.
func TestEveryDirectionAndHemisphereIsLearned(t *testing.T) {
	for _, tc := range []struct {
		zone   string
		change time.Time
	}{
		{"Europe/Berlin", time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC)},    // back an hour
		{"Australia/Sydney", time.Date(2026, 4, 4, 16, 0, 0, 0, time.UTC)},  // back an hour
		{"Australia/Sydney", time.Date(2026, 10, 3, 16, 0, 0, 0, time.UTC)}, // forward an hour
		{"America/Santiago", time.Date(2026, 9, 6, 4, 0, 0, 0, time.UTC)},   // forward an hour
		{"Pacific/Auckland", time.Date(2026, 9, 26, 14, 0, 0, 0, time.UTC)}, // forward, a week before Sydney
	} {
		loc := zone(t, tc.zone)
		var at []time.Time
		for _, ch := range clocks.Changes(tc.change.Add(-time.Hour), tc.change) {
			if ch.Clock.Name == tc.zone {
				at = append(at, ch.At)
			}
		}
		if len(at) != 1 || !at[0].Equal(tc.change) {
			t.Fatalf("%s changes %v, want at %v", tc.zone, at, tc.change)
		}
		s := newSite(loc, 3000, tc.change.Add(-5*7*24*time.Hour), tc.change.Add(8*24*time.Hour), 8)
		if v := clocks.Learn(s.at, tc.change.Add(3*24*time.Hour), reach, nil); v.Clock.Name != tc.zone {
			t.Errorf("%s, 3 days after its change of %s: learned %s (z %.1f)", tc.zone, tc.change.Format(time.DateOnly), v.Clock.Name, v.Evidence.Z)
		}
	}
}
