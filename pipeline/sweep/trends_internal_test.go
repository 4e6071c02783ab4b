package sweep

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/internal/testenv"
)

// dayCounter records the first day each trend query reads.
type dayCounter struct {
	Counter
	asked []time.Time
}

func (d *dayCounter) WindowCounts(_ context.Context, q traffic.WindowQuery) ([]traffic.PageCount, error) {
	d.asked = append(d.asked, q.Starts[0])
	return nil, nil
}

// A day's trends are read once, kept while a sweep needs them, and the
// oldest no longer needed are forgotten beyond two days, never one a
// sweep catching up over several days still needs.
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
	for _, step := range []struct {
		need       []int
		read, kept []int
	}{
		{[]int{1, 2, 3}, []int{1, 2, 3}, []int{1, 2, 3}}, // catching up over three days
		{[]int{3}, nil, []int{2, 3}},
		{nil, nil, []int{2, 3}}, // every normal cached: nothing read, nothing forgotten
		{[]int{4}, []int{4}, []int{3, 4}},
		{[]int{3, 4}, nil, []int{3, 4}},
	} {
		dc.asked = nil
		if err := b.trendsFor(context.Background(), set, need(step.need...)); err != nil {
			t.Fatal(err)
		}
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
