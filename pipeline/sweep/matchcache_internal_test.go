package sweep

import (
	"fmt"
	"testing"

	"github.com/pagewatch/pagewatch/domain/rules"
)

// A rule that reads every page of its site remembers the matches of at
// most maxMatches pages, however many paths clients make up: 300k
// unmatched paths once added 300k entries (64 MiB) for good.
func TestMatchCacheIsBounded(t *testing.T) {
	r := rules.Rule{Name: "sum", Site: "example.com", Match: rules.Match{Prefix: "/blog/"}, Aggregate: rules.Sum,
		Thresholds: rules.Thresholds{100}, Window: rules.ParseWindow("1h"), Notify: rules.Notify{Recipients: []string{"a@example.com"}}}
	if err := r.Validate("rules"); err != nil {
		t.Fatal(err)
	}
	set := newRuleSet([]rules.Rule{r})
	set.maxMatches = 1000
	for i := 0; i < 10_000; i++ {
		path := fmt.Sprintf("/made-up/%d", i)
		if i%2 == 0 {
			path = fmt.Sprintf("/blog/%d", i)
		}
		m := set.matching("example.com", path)
		if want := i%2 == 0; (len(m.rules) == 1) != want {
			t.Fatalf("%s: %d matches, want matched %t", path, len(m.rules), want)
		}
	}
	if n := len(set.matches); n > set.maxMatches {
		t.Fatalf("%d pages remembered, want at most %d", n, set.maxMatches)
	}
}

// Sweeps that read three times the pages the cache holds, in the same
// order each time, find the first maxMatches of them remembered every
// sweep (starting the cache again from empty found none); a page no
// sweep reads is forgotten a sweep later; and it never holds more than
// two sweeps' bound.
func TestMatchCacheKeepsWhatSweepsRead(t *testing.T) {
	r := rules.Rule{Name: "all", Site: "example.com", Match: rules.Match{Prefix: "/"},
		Thresholds: rules.Thresholds{100}, Window: rules.ParseWindow("1h"), Notify: rules.Notify{Recipients: []string{"a@example.com"}}}
	if err := r.Validate("rules"); err != nil {
		t.Fatal(err)
	}
	set := newRuleSet([]rules.Rule{r})
	set.maxMatches = 1000
	remembered := func(p page) bool {
		_, a := set.matches[p]
		_, b := set.older[p]
		return a || b
	}
	for sweep := 0; sweep < 4; sweep++ {
		set.sweepStarted()
		found := 0
		for i := 0; i < 3*set.maxMatches; i++ {
			p := page{"example.com", fmt.Sprintf("/p/%d", i)}
			if remembered(p) {
				found++
			}
			if m := set.matching(p.site, p.path); len(m.rules) != 1 {
				t.Fatalf("%s: %d matches", p.path, len(m.rules))
			}
		}
		if want := min(sweep, 1) * set.maxMatches; found != want {
			t.Errorf("sweep %d: %d pages found remembered, want %d", sweep, found, want)
		}
		if n := len(set.matches) + len(set.older); n > 2*set.maxMatches {
			t.Fatalf("%d pages remembered, want at most %d", n, 2*set.maxMatches)
		}
	}
	gone := page{"example.com", "/p/0"}
	set.sweepStarted()
	set.sweepStarted()
	if remembered(gone) {
		t.Error("a page no sweep read is still remembered two sweeps later")
	}
}
