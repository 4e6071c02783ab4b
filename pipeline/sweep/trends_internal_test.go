package sweep

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

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
