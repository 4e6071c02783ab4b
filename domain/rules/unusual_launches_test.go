package rules

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// A site's launches keep the few a judgment reads, and a page reads the
// same of them as of all its site's others: the count and the run at
// its rank (the second highest and longest, or 1 in 20 of a site that
// launches many), whichever page it is and however many there are;
// those older than 4 weeks are forgotten.
func TestLaunchesKeepWhatAJudgmentReads(t *testing.T) {
	at := time.Date(2026, 3, 30, 12, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(7, 11))
	for _, n := range []int{0, 1, 2, 3, 7, 40, 41, 100, 300} {
		var all []Launch
		for i := range n {
			all = append(all, Launch{Page: fmt.Sprint(i), Burst: Burst{
				At:     at.Add(-time.Duration(rng.IntN(40*24)) * time.Hour),
				Count:  uint64(50 + rng.IntN(200)),
				Lasted: time.Duration(1+rng.IntN(12)) * time.Hour, Launch: true}})
		}
		kept := NewLaunches(all, at)
		since := at.Add(-pastSpan)
		for _, page := range append([]string{"new"}, pagesOf(all)...) {
			var others []Burst
			for _, l := range all {
				if l.Page != page && !l.At.Before(since) {
					others = append(others, l.Burst)
				}
			}
			got, rank := kept.For(page)
			if want := max(2, (len(others)+19)/20); rank != want {
				t.Fatalf("%d launches, page %s: rank %d, want %d of its %d others", n, page, rank, want, len(others))
			}
			if a, b := nthHighest(got, since, time.Time{}, rank), nthHighest(others, since, time.Time{}, rank); a != b {
				t.Errorf("%d launches, page %s: count at rank %d %d, of all its others %d", n, page, rank, a, b)
			}
			if a, b := nthLongest(got, since, rank), nthLongest(others, since, rank); a != b {
				t.Errorf("%d launches, page %s: run at rank %d %s, of all its others %s", n, page, rank, a, b)
			}
		}
	}
}

func pagesOf(all []Launch) []string {
	var out []string
	for _, l := range all {
		out = append(out, l.Page)
	}
	return out
}

// A page is in its launch when it remembers no burst and had no views in
// the weeks before, but a stray one or two, and then through its first day and the runs begun in it;
// not a page with views in the weeks before, nor one whose first burst was no
// launch, nor once a burst of its own came after its first day.
func TestLaunchingIsAPagesFirstDay(t *testing.T) {
	at := time.Date(2026, 3, 30, 12, 0, 0, 0, time.UTC)
	seen := Expected{OK: true, Value: 3, Top: 3}
	launch := Burst{At: at.Add(-3 * time.Hour), Count: 150, Launch: true}
	for _, c := range []struct {
		name      string
		s         State
		o         Observation
		in, first bool
	}{
		{"new", State{}, Observation{At: at, Expected: seen, BeforeOK: true}, true, true},
		{"new, but for two previews", State{}, Observation{At: at, Expected: seen, Before: 2, BeforeOK: true}, true, true},
		{"views in the weeks before", State{}, Observation{At: at, Expected: seen, Before: 3, BeforeOK: true}, false, true},
		{"the weeks before unread", State{}, Observation{At: at, Expected: seen}, false, true},
		{"normal unknown", State{}, Observation{At: at, BeforeOK: true}, false, false},
		{"its first day", State{Bursts: []Burst{launch}}, Observation{At: at, Expected: seen}, true, false},
		{"a day on", State{Bursts: []Burst{launch}}, Observation{At: at.Add(24 * time.Hour), Expected: seen}, false, false},
		{"a day on, in the run begun in it", State{Bursts: []Burst{launch}}, Observation{At: at.Add(24 * time.Hour), Above: at.Add(20 * time.Hour), Expected: seen}, true, false},
		{"a second burst that day", State{Bursts: []Burst{launch, {At: at, Count: 40}}}, Observation{At: at.Add(time.Hour), Expected: seen}, true, false},
		{"a burst after its first day", State{Bursts: []Burst{launch, {At: at.Add(22 * time.Hour), Count: 40}}}, Observation{At: at.Add(22 * time.Hour), Expected: seen}, false, false},
		{"its first burst no launch", State{Bursts: []Burst{{At: at.Add(-3 * time.Hour), Count: 150}}}, Observation{At: at, Expected: seen, BeforeOK: true}, false, false},
		{"its launch forgotten", State{Bursts: []Burst{launch}}, Observation{At: at.Add(pastSpan), Expected: seen, BeforeOK: true}, true, true},
	} {
		in, first := launching(c.s, c.o)
		if in != c.in || first != c.first {
			t.Errorf("%s: in %v first %v, want %v %v", c.name, in, first, c.in, c.first)
		}
	}
}
