package rules

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestSpikeRulesValidate(t *testing.T) {
	rs := decode(t, `
rules:
  - name: spikes
    match: {prefix: /}
    window: 1h
    zone: Europe/Berlin
    spike: {factor: 4, min_count: 60, baseline: {same_time: {days: 7, weeks: 4}}}
    escalate: [2, 5, 10]
    notify_on: [fire, escalate, resolve]
    rearm: {hysteresis: 0.5, settle: 6h}
    notify: {recipients: [a@example.com]}
  - name: quiet
    site: example.com
    match: {prefix: /}
    window: 3h
    spike: {factor: 3, min_count: 100, direction: down, baseline: {trailing: 7d}}
    notify: {recipients: [a@example.com]}
  - name: z
    match: {prefix: /}
    window: 1h
    spike: {factor: 2, min_count: 10, direction: both, baseline: {zscore: {k: 3.5}}}
    notify: {recipients: [a@example.com]}
  - name: new
    match: {glob: /blog/*}
    window: 1h
    new_page: {lookback: 30d, min_count: 200}
    notify: {recipients: [a@example.com]}
`)
	if err := ValidateAll("sweeper.rules", rs); err != nil {
		t.Fatal(err)
	}
	if rs[0].Site != "" || !rs[0].Matches("any.example", "/x") || rs[1].Matches("other.example", "/x") {
		t.Error("a rule without a site should match every site's pages, one with a site only its own")
	}
	if rs[0].Spike.Direction != Up || rs[2].Spike.Baseline.ZScore.Windows != DefaultZScoreWindows {
		t.Errorf("defaults not filled in: %+v %+v", rs[0].Spike, rs[2].Spike.Baseline.ZScore)
	}
	for i, k := range []Kind{KindSpike, KindSpike, KindSpike, KindNewPage} {
		if rs[i].Kind() != k || !rs[i].Episodic() {
			t.Errorf("rule %d: kind %s episodic %v, want %s and episodic", i, rs[i].Kind(), rs[i].Episodic(), k)
		}
	}
}

func TestSpikeValidationNamesKeys(t *testing.T) {
	rs := decode(t, `
rules:
  - name: bad
    match: {prefix: /}
    window: 90m
    threshold: 10
    spike: {factor: 1, direction: sideways, baseline: {same_time: {}, trailing: 12h}}
    escalate: [5, 2]
    notify_on: [fire, shout]
    rearm: {cooldown: 1h, settle: -1s}
    notify: {recipients: [a@example.com]}
  - name: bad-new
    match: {prefix: /}
    window: day
    new_page: {lookback: 30m}
    notify: {recipients: [a@example.com]}
  - name: bad-z
    match: {prefix: /}
    window: 1h
    aggregate: sum
    spike: {factor: 2, min_count: 5, baseline: {zscore: {k: 0, windows: 2}}}
    notify: {recipients: [a@example.com]}
`)
	err := ValidateAll("sweeper.rules", rs)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`sweeper.rules[0]: give one of threshold, unusual, spike and new_page, not 2 of them`,
		`sweeper.rules[0].window: spike rules count whole hours, 1h to 168h (baselines are kept per hour), got 1h30m`,
		`sweeper.rules[0].rearm.cooldown: spike episodes end when the page is back to normal`,
		`sweeper.rules[0].spike.factor: required: a multiple of the baseline above 1`,
		`sweeper.rules[0].spike.min_count: required`,
		`sweeper.rules[0].spike.direction: must be up, down or both, got "sideways"`,
		`sweeper.rules[0].spike.baseline.same_time: give days, weeks or both`,
		`sweeper.rules[0].spike.baseline.trailing: must be whole hours from 1d to 31d, got 12h`,
		`sweeper.rules[0].spike.baseline: exactly one of same_time, trailing, zscore must be set`,
		`sweeper.rules[0].rearm.settle: must not be negative`,
		`sweeper.rules[0].escalate[1]: steps must be strictly increasing, got 2 after 5`,
		`sweeper.rules[0].notify_on[1]: must be fire, escalate or resolve, got "shout"`,
		`sweeper.rules[1].window: new_page rules need a rolling window (like 1h), got day`,
		`sweeper.rules[1].new_page.min_count: required`,
		`sweeper.rules[1].new_page.lookback: must be whole hours from 1h to 400d, got 30m`,
		`sweeper.rules[2].aggregate: spike rules judge each page against its own past: per_page only`,
		`sweeper.rules[2].spike.baseline.zscore.k: required`,
		`sweeper.rules[2].spike.baseline.zscore.windows: must be 4..336, got 2`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

func spikeRule(t *testing.T, src string) *Rule {
	t.Helper()
	rs := decode(t, "rules:\n  - name: r\n    match: {prefix: /}\n    notify: {recipients: [a@example.com]}\n"+src)
	if err := ValidateAll("r", rs); err != nil {
		t.Fatal(err)
	}
	return &rs[0]
}

// The same wall-clock hour a week back is 167 or 169 hours away across a
// DST change, and spans that begin before the data are left out.
func TestSameTimeSpansFollowDST(t *testing.T) {
	r := spikeRule(t, "    window: 1h\n    zone: Europe/Berlin\n    spike: {factor: 3, min_count: 1, baseline: {same_time: {weeks: 2}}}\n")
	// Monday 2026-03-30 10:00 CEST = 08:00 UTC; a week earlier was CET.
	end := time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)
	spans := r.BaselineSpans(end, time.Time{})
	want := []time.Time{time.Date(2026, 3, 23, 9, 0, 0, 0, time.UTC), time.Date(2026, 3, 16, 9, 0, 0, 0, time.UTC)}
	if len(spans) != 2 || !spans[0].To.Equal(want[0]) || !spans[1].To.Equal(want[1]) || spans[0].To.Sub(spans[0].From) != time.Hour {
		t.Fatalf("spans %v, want windows ending %v", spans, want)
	}
	if got := r.BaselineSpans(end, want[0].Add(-time.Hour)); len(got) != 1 {
		t.Errorf("spans from before the data began: %v", got)
	}
	// Only one of two weeks known: half, rounded up, is enough.
	if e := r.Expect([]uint64{10}); !e.OK || e.Value != 10 {
		t.Errorf("one of two weeks: %+v", e)
	}
	if e := r.Expect(nil); e.OK {
		t.Errorf("no history: %+v", e)
	}
}

func TestTrailingAndZScoreSpans(t *testing.T) {
	end := time.Date(2026, 3, 30, 8, 37, 0, 0, time.UTC)
	tr := spikeRule(t, "    window: 2h\n    spike: {factor: 3, min_count: 1, baseline: {trailing: 1d}}\n")
	spans := tr.BaselineSpans(end, time.Time{})
	if len(spans) != 24 || !spans[0].To.Equal(time.Date(2026, 3, 30, 6, 0, 0, 0, time.UTC)) || !spans[23].To.Equal(time.Date(2026, 3, 29, 7, 0, 0, 0, time.UTC)) {
		t.Errorf("trailing spans %v .. %v (%d)", spans[0], spans[len(spans)-1], len(spans))
	}
	// A median: two spikes among 24 windows do not move it.
	counts := make([]uint64, 24)
	for i := range counts {
		counts[i] = 100
	}
	counts[3], counts[9] = 5000, 9000
	if e := tr.Expect(counts); e.Value != 100 {
		t.Errorf("trailing baseline %+v, want 100", e)
	}
	z := spikeRule(t, "    window: 1h\n    spike: {factor: 1.5, min_count: 1, baseline: {zscore: {k: 3, windows: 4}}}\n")
	spans = z.BaselineSpans(end, time.Time{})
	if len(spans) != 4 || !spans[0].To.Equal(time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)) || !spans[3].From.Equal(time.Date(2026, 3, 30, 4, 0, 0, 0, time.UTC)) {
		t.Errorf("zscore spans %v", spans)
	}
}

func obs(at time.Time, count uint64, base float64) Observation {
	return Observation{At: at, Count: count, Expected: Expected{Value: base, Scale: max(1, base/10), Samples: 7, OK: true}}
}

func TestSpikeEpisodeFiresEscalatesAndResolvesOnce(t *testing.T) {
	r := spikeRule(t, `    window: 1h
    spike: {factor: 3, min_count: 50, baseline: {same_time: {days: 7}}}
    escalate: [2, 5]
    notify_on: [fire, escalate, resolve]
    rearm: {hysteresis: 0.5, settle: 1h}
`)
	t0 := time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)
	var st State
	var got []string
	steps := []struct {
		min   int
		count uint64
	}{
		{0, 100},  // normal
		{1, 290},  // below 3× 100
		{2, 300},  // fires
		{3, 400},  // still up: nothing
		{4, 700},  // 700 / 300 = 2.3: step 2
		{5, 650},  // nothing new
		{6, 1600}, // 5.3: step 5
		{7, 2000}, // no more steps
		{8, 100},  // back below 150: settling
		{9, 200},  // up again (>= 150): not back
		{10, 120}, // back again
		{69, 100}, // 59 min: not yet
		{70, 90},  // an hour back: resolves
		{71, 100},
	}
	for _, s := range steps {
		var fire []Firing
		st, fire = r.StepEpisode(st, obs(t0.Add(time.Duration(s.min)*time.Minute), s.count, 100))
		for _, f := range fire {
			got = append(got, f.String())
			if f.Event == EventResolve && (f.Episode.Peak != 2000 || !f.Episode.Since.Equal(t0.Add(2*time.Minute))) {
				t.Errorf("resolve carries %+v, want peak 2000 since minute 2", f.Episode)
			}
		}
	}
	want := "[{fire 1} {escalate 1.x2} {escalate 1.x5} {resolve 1.resolved}]"
	if g := "[" + strings.Join(got, " ") + "]"; g != want {
		t.Errorf("got %s, want %s", g, want)
	}
	if st.Open != nil || st.Episode != 1 {
		t.Errorf("state after resolve: %+v", st)
	}
	// The next spike is a new episode.
	_, fire := r.StepEpisode(st, obs(t0.Add(80*time.Minute), 400, 100))
	if len(fire) != 1 || fire[0].Key != "2" {
		t.Errorf("next spike: %v", fire)
	}
}

func TestSpikeDownAndZeroNormal(t *testing.T) {
	r := spikeRule(t, "    window: 1h\n    spike: {factor: 4, min_count: 20, direction: down, baseline: {same_time: {weeks: 1}}}\n    notify_on: [fire, resolve]\n")
	t0 := time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)
	if _, f := r.StepEpisode(State{}, obs(t0, 0, 0)); len(f) != 0 {
		t.Errorf("a page whose normal is zero went quiet: %v", f)
	}
	if _, f := r.StepEpisode(State{}, obs(t0, 0, 10)); len(f) != 0 {
		t.Errorf("a page whose normal is below min_count went quiet: %v", f)
	}
	if _, f := r.StepEpisode(State{}, obs(t0, 26, 100)); len(f) != 0 {
		t.Errorf("26 of 100 is not a quarter: %v", f)
	}
	st, f := r.StepEpisode(State{}, obs(t0, 25, 100))
	if len(f) != 1 || f[0].Event != EventFire || !st.Open.Down {
		t.Fatalf("25 of 100 went quiet: %v %+v", f, st)
	}
	if _, f := r.StepEpisode(st, obs(t0.Add(time.Minute), 1000, 100)); len(f) != 1 || f[0].Event != EventResolve {
		t.Errorf("back to normal: %v", f)
	}
	// Without a known normal nothing fires and an open episode holds.
	if next, f := r.StepEpisode(st, Observation{At: t0.Add(time.Minute), Count: 1000}); len(f) != 0 || next.Open == nil {
		t.Errorf("unknown normal: %v %+v", f, next)
	}
}

func TestNewPageFiresOnceForAPageWithNoPast(t *testing.T) {
	r := spikeRule(t, "    window: 1h\n    new_page: {lookback: 30d, min_count: 100}\n")
	t0 := time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)
	spans := r.BaselineSpans(t0, time.Time{})
	if len(spans) != 1 || spans[0].To.Sub(spans[0].From) != 30*24*time.Hour || !spans[0].To.Equal(t0.Add(-time.Hour)) {
		t.Fatalf("lookback %v", spans)
	}
	if r.BaselineSpans(t0, t0.Add(-24*time.Hour)) != nil {
		t.Error("a lookback the data does not cover should not count as no views")
	}
	none := Expected{Value: 0, Samples: 1, OK: true}
	some := Expected{Value: 3, Samples: 1, OK: true}
	if _, f := r.StepEpisode(State{}, Observation{At: t0, Count: 500, Expected: some}); len(f) != 0 {
		t.Errorf("a page with a past fired: %v", f)
	}
	st, f := r.StepEpisode(State{}, Observation{At: t0, Count: 100, Expected: none})
	if len(f) != 1 {
		t.Fatalf("a new page at min_count: %v", f)
	}
	// While it stays busy, nothing more; its past is no longer empty.
	if _, f := r.StepEpisode(st, Observation{At: t0.Add(time.Hour), Count: 5000, Expected: some}); len(f) != 0 {
		t.Errorf("fired again: %v", f)
	}
}

func TestThresholdEpisodes(t *testing.T) {
	r := spikeRule(t, "    window: 1h\n    threshold: 100\n    escalate: [10]\n    notify_on: [fire, escalate, resolve]\n")
	t0 := time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)
	var st State
	var got []string
	// Fired at 150, it escalates at 10 × its threshold (1,001), not at
	// 10 × the count it fired at, as a rule with a normal does.
	for i, n := range []uint64{50, 150, 500, 1001, 2000, 100, 101} {
		var f []Firing
		st, f = r.Step(st, n, t0.Add(time.Duration(i)*time.Minute))
		for _, x := range f {
			got = append(got, fmt.Sprintf("%s@%d", x, n))
		}
	}
	if g := strings.Join(got, " "); g != "{fire 1}@150 {escalate 1.x10}@1001 {resolve 1.resolved}@100 {fire 2}@101" {
		t.Errorf("got %s", g)
	}
}
