package sweep

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// newsletterRows are a page at 0 between sends, each about 120 views in
// its first 20 minutes, every 2 to 3 days from start for days days: the
// page whose bursts are its normal.
func newsletterRows(seed uint64, start time.Time, days int) string {
	rng := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	for at := start.Add(9 * time.Hour); at.Before(start.Add(time.Duration(days) * 24 * time.Hour)); at = at.Add(time.Duration(48+rng.IntN(24)) * time.Hour) {
		for m := 0; m < 20; m += 5 {
			fmt.Fprintf(&b, "%s,example.com,/newsletter,%d\n", at.Add(time.Duration(m)*time.Minute).Format(time.RFC3339), poisson(rng, 30))
		}
	}
	return b.String()
}

// A backtest's last days are judged as by a sweeper that ran all along:
// what the pages' states remember (a newsletter's sends, the blog's
// launches) is learnt from the 4 weeks before since, its messages there
// left out. Backtested from its 2nd day or from its 30th, the blog's
// last six days say the same (a launch past all but one of the 4
// weeks before: fired and resolved); begun on its 30th with nothing
// remembered, the newsletter's next send was news, and each new post
// took off from nothing.
func TestBacktestSinceJudgesAsASweeperRunningAllAlong(t *testing.T) {
	csv, start, _ := blogCSV(31, 20, 1)
	csv += newsletterRows(5, start, 35)
	since := start.Add(29 * 24 * time.Hour)

	all := backtestCSV(t, csv, start.Add(24*time.Hour), unusualBoth())
	var want []string
	for _, x := range all {
		if !x.CrossedAt.Before(since) {
			want = append(want, said(x))
		}
	}
	if len(want) != 2 || !strings.Contains(want[0], "/posts/30 fire up") || !strings.Contains(want[1], "/posts/30 resolve up") {
		t.Fatalf("from its 2nd day, its last six days said:\n%s\nwant /posts/30 told and resolved", strings.Join(want, "\n"))
	}
	var got []string
	for _, x := range backtestCSV(t, csv, since, unusualBoth()) {
		if x.CrossedAt.Before(since) {
			t.Errorf("warm-up message %s at %s is before since", x.Key, x.CrossedAt)
		}
		got = append(got, said(x))
	}
	if !slices.Equal(got, want) {
		t.Errorf("since its 30th day:\n%s\nwant, as from its 2nd:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, x := range all {
		if x.Path == "/newsletter" && x.CrossedAt.After(start.Add(14*24*time.Hour)) {
			t.Errorf("the newsletter's sends are its normal, but %s %s at %s", x.Event, x.Path, x.CrossedAt)
		}
	}
}

// said is what a crossing tells, without its episode's ordinal in the
// key: a replay begun later numbers a page's episodes from there.
func said(x crossing.Crossing) string {
	return fmt.Sprintf("%s %s %s %s count=%d threshold=%d", x.CrossedAt.Format(time.RFC3339), x.Path, x.Event, x.Why.Direction, x.Count, x.Threshold)
}

// The warm-up reads weeks more of a site's rows, but when the site's
// data was late is learnt as before, from the days asked for and their
// baselines: a spike rule looking down says the same beside an unusual
// rule (whose warm-up reaches 4 weeks further back than its baselines)
// as alone. The site's nights were empty for its first 43 days of 66
// and busy since; 2 hours without rows one night of its last days are
// "no data" either way. Learnt from the warm-up's weeks too, most of
// them with empty nights, they were a site quiet at night as it used to
// be, and told nothing.
func TestBacktestWarmUpLeavesWhenASiteWasLateAlone(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(9, 9))
	gap := start.Add(64*24*time.Hour + 2*time.Hour)
	var b strings.Builder
	b.WriteString("timestamp,site,path,count\n")
	for at := start; at.Before(start.Add(66 * 24 * time.Hour)); at = at.Add(time.Minute) {
		day := at.Sub(start) / (24 * time.Hour)
		if (at.Hour() < 7 && day < 43) || (!at.Before(gap) && at.Before(gap.Add(2*time.Hour))) {
			continue
		}
		fmt.Fprintf(&b, "%s,example.com,/docs,%d\n", at.Format(time.RFC3339), 1+poisson(rng, 9))
	}
	spike := spikeRuleOf("docs-quiet", rules.Spike{Factor: 3, MinCount: 100, Direction: rules.Down, Baseline: rules.Baseline{SameTime: &rules.SameTime{Days: 3}}})
	spike.Site = "example.com"
	other := unusualBoth()
	other.Name, other.Match = "other", rules.Match{Exact: "/other"}
	since := start.Add(63 * 24 * time.Hour)
	alone := eventsOf(backtestCSV(t, b.String(), since, spike))
	var beside []crossing.Crossing
	for _, x := range backtestCSV(t, b.String(), since, spike, other) {
		if x.Rule == spike.Name {
			beside = append(beside, x)
		}
	}
	if got := eventsOf(beside); got != alone {
		t.Errorf("beside an unusual rule: %s; alone: %s", got, alone)
	}
	if !strings.Contains(alone, "fire no_data") {
		t.Errorf("alone: %s; want its 2 hours without rows told as no data", alone)
	}
}
