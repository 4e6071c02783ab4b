package sweep

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/internal/testenv"
)

// dayCounter records the first day each trend query reads; it fails
// while fail is set.
type dayCounter struct {
	Counter
	asked []time.Time
	fail  bool
}

func (d *dayCounter) WindowCounts(_ context.Context, q traffic.WindowQuery) ([]traffic.PageCount, error) {
	d.asked = append(d.asked, q.Starts[0])
	if d.fail {
		return nil, errors.New("timeout")
	}
	return nil, nil
}

// A day's trends are read once, kept while a sweep needs them, and the
// oldest no longer needed are forgotten beyond two days, never one a
// sweep catching up over several days still needs. A read that fails
// keeps nothing and is tried again at the next sweep; rules over other
// sites read them again.
func TestTrendsAreReadOnceADayAndForgotten(t *testing.T) {
	dc := &dayCounter{}
	b := &baselines{counts: dc, seals: &sealing{}, logger: testenv.Logger(t)}
	set := newRuleSet(nil)
	day := func(i int) time.Time { return time.Date(2026, 3, 1+i, 0, 0, 0, 0, time.UTC) }
	need := func(days ...int) map[time.Time]bool {
		m := map[time.Time]bool{}
		for _, d := range days {
			m[day(d)] = true
		}
		return m
	}
	other := newRuleSet([]rules.Rule{{Name: "b", Site: "b.example", Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"),
		Unusual: &rules.Unusual{}, Notify: rules.Notify{Recipients: []string{"ops@example.com"}}}})
	for _, step := range []struct {
		need       []int
		fail       bool
		set        *ruleSet
		read, kept []int
	}{
		{need: []int{1, 2, 3}, read: []int{1, 2, 3}, kept: []int{1, 2, 3}}, // catching up over three days
		{need: []int{3}, kept: []int{2, 3}},
		{kept: []int{2, 3}}, // every normal cached: nothing read, nothing forgotten
		{need: []int{4}, fail: true, read: []int{4}, kept: []int{2, 3}},
		{need: []int{4}, read: []int{4}, kept: []int{3, 4}},
		{need: []int{3, 4}, kept: []int{3, 4}},
		{need: []int{4}, set: other, read: []int{4}, kept: []int{4}},
	} {
		dc.asked, dc.fail = nil, step.fail
		s := set
		if step.set != nil {
			s = step.set
		}
		b.trendsFor(context.Background(), s, need(step.need...))
		var read, kept []time.Time
		for _, d := range step.read {
			read = append(read, day(d))
		}
		for _, d := range step.kept {
			kept = append(kept, day(d))
		}
		slices.SortFunc(dc.asked, time.Time.Compare)
		got := slices.SortedFunc(maps.Keys(b.trends), time.Time.Compare)
		if !slices.Equal(dc.asked, read) || !slices.Equal(got, kept) {
			t.Errorf("needing %v: read %v, kept %v; want %v, %v", step.need, dc.asked, got, read, kept)
		}
	}
}

// noiseCounter records each page-noise query; it has no trends. Its
// noise queries fail while fail is set.
type noiseCounter struct {
	Counter
	noises []traffic.NoiseQuery
	trends int
	fail   bool
}

func (n *noiseCounter) WindowCounts(context.Context, traffic.WindowQuery) ([]traffic.PageCount, error) {
	n.trends++
	return nil, nil
}

func (n *noiseCounter) PageNoises(_ context.Context, q traffic.NoiseQuery) ([]traffic.PageNoise, error) {
	n.noises = append(n.noises, q)
	if n.fail {
		return nil, errors.New("memory limit (total) exceeded")
	}
	return []traffic.PageNoise{{Site: q.Sites[0], Path: "/p", Noise: 0.05}}, nil
}

// A day's page noise waits for its hours to be sealed (a backlog being
// sealed at the day's first sweeps): not read before, read at the first
// sweep after, once, for every site with data when the rules name none;
// the day's trends are read once all along.
func TestPageNoiseWaitsForItsHoursToBeSealed(t *testing.T) {
	nc := &noiseCounter{}
	seals := &sealing{}
	b := &baselines{counts: nc, seals: seals, logger: testenv.Logger(t),
		starts: map[string]time.Time{"a.example": time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "b.example": time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)}}
	set := newRuleSet(nil) // every site
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 0, rules.TrendDays)
	need := map[time.Time]bool{from: true}
	for i, step := range []struct {
		sealed  time.Time
		queries int
	}{
		{to.AddDate(0, 0, -1), 0}, // a day short
		{to.AddDate(0, 0, -1), 0},
		{to, 1},
		{to, 1},
	} {
		seals.mu.Lock()
		seals.hours = step.sealed
		seals.mu.Unlock()
		b.trendsFor(context.Background(), set, need)
		if len(nc.noises) != step.queries {
			t.Fatalf("sweep %d, hours sealed before %s: %d noise queries, want %d", i+1, step.sealed.Format(time.DateOnly), len(nc.noises), step.queries)
		}
	}
	if nc.trends != 1 {
		t.Errorf("the day's trends read %d times, want once", nc.trends)
	}
	if q := nc.noises[0]; !slices.Equal(q.Sites, []string{"a.example", "b.example"}) || q.Weeks != rules.NoiseWeeks {
		t.Errorf("asked %v over %d weeks, want both sites over %d", q.Sites, q.Weeks, rules.NoiseWeeks)
	}
	if tr := b.trends[from][page{"a.example", "/p"}]; !tr.NoiseOK || tr.Noise != 0.05 {
		t.Errorf("the page's noise %+v, want 0.05 read", tr)
	}
}

// A daily read that fails is counted and raised (PagewatchPageNormalsNotRead)
// until one succeeds: the trends at the next sweep, the noise the next
// day; each read that succeeds says how many pages it gave one.
func TestAFailedNormalReadIsRaisedUntilOneSucceeds(t *testing.T) {
	m := newMetrics(prometheus.NewRegistry())
	dc := &dayCounter{fail: true}
	b := &baselines{counts: dc, seals: &sealing{}, logger: testenv.Logger(t), reads: m}
	set := newRuleSet(nil)
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	failing := func(read string) float64 { return testutil.ToFloat64(m.normalFailing.WithLabelValues(read)) }
	reads := func(read, result string) float64 {
		return testutil.ToFloat64(m.normalReads.WithLabelValues(read, result))
	}
	b.trendsFor(context.Background(), set, map[time.Time]bool{day: true})
	if failing("trend") != 1 || reads("trend", "failed") != 1 {
		t.Fatalf("a failed trend read: failing %v, %v failed reads; want 1, 1", failing("trend"), reads("trend", "failed"))
	}
	dc.fail = false
	b.trendsFor(context.Background(), set, map[time.Time]bool{day: true})
	if failing("trend") != 0 || reads("trend", "ok") != 1 {
		t.Errorf("read at the next sweep: failing %v, %v reads; want 0, 1", failing("trend"), reads("trend", "ok"))
	}

	nc := &noiseCounter{fail: true}
	seals := &sealing{hours: day.AddDate(0, 0, rules.TrendDays+1)}
	b = &baselines{counts: nc, seals: seals, logger: testenv.Logger(t), reads: m,
		starts: map[string]time.Time{"a.example": day.AddDate(0, 0, -60)}}
	b.trendsFor(context.Background(), set, map[time.Time]bool{day: true})
	b.trendsFor(context.Background(), set, map[time.Time]bool{day: true})
	if failing("noise") != 1 || reads("noise", "failed") != 1 || len(nc.noises) != 1 {
		t.Fatalf("a failed noise read: failing %v, %v failed reads, asked %d times; want 1, 1, once that day", failing("noise"), reads("noise", "failed"), len(nc.noises))
	}
	nc.fail = false
	next := day.AddDate(0, 0, 1)
	seals.hours = next.AddDate(0, 0, rules.TrendDays+1)
	b.trendsFor(context.Background(), set, map[time.Time]bool{next: true})
	with := testutil.ToFloat64(m.pagesWith.WithLabelValues("noise"))
	if failing("noise") != 0 || reads("noise", "ok") != 1 || with != 1 {
		t.Errorf("read the next day: failing %v, %v reads, %v pages with a noise; want 0, 1, 1", failing("noise"), reads("noise", "ok"), with)
	}
}
