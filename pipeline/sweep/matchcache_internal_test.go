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
	defer func(n int) { maxMatches = n }(maxMatches)
	maxMatches = 1000
	r := rules.Rule{Name: "sum", Site: "example.com", Match: rules.Match{Prefix: "/blog/"}, Aggregate: rules.Sum,
		Thresholds: rules.Thresholds{100}, Window: rules.ParseWindow("1h"), Notify: rules.Notify{Recipients: []string{"a@example.com"}}}
	if err := r.Validate("rules"); err != nil {
		t.Fatal(err)
	}
	set := newRuleSet([]rules.Rule{r})
	for i := 0; i < 10_000; i++ {
		path := fmt.Sprintf("/made-up/%d", i)
		if i%2 == 0 {
			path = fmt.Sprintf("/blog/%d", i)
		}
		m := set.matching("example.com", path)
		if want := i%2 == 0; (len(m) == 1) != want {
			t.Fatalf("%s: %d matches, want matched %t", path, len(m), want)
		}
	}
	if n := len(set.matches); n > maxMatches {
		t.Fatalf("%d pages remembered, want at most %d", n, maxMatches)
	}
}
