package sweep

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// blogCSV is a blog of 5 weeks in rows per 5 minutes: a home page with a
// daily rhythm, and perDay new posts every day between 9:00 and 13:00 whose
// first hour is lognormal about 150 views (half of them 110 to 210),
// halving every 4 hours to a trickle of search visits, and a view of
// its author's preview the day before. big, unless
// zero, is a post day that launches ten times larger.
func blogCSV(seed uint64, big, perDay int) (csv string, start time.Time, launches []time.Time) {
	start = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(seed, 29))
	type post struct {
		path string
		at   time.Time
		size float64
	}
	var posts []post
	for d := range 35 {
		for k := range perDay {
			at := start.Add(time.Duration(d)*24*time.Hour + 9*time.Hour + time.Duration(rng.IntN(48))*5*time.Minute)
			size := 150 * math.Exp(0.45*rng.NormFloat64())
			if big != 0 && d == big && k == 0 {
				size *= 10
			}
			path := fmt.Sprintf("/posts/%02d", d+1)
			if perDay > 1 {
				path = fmt.Sprintf("/posts/%02d-%d", d+1, k+1)
			}
			posts = append(posts, post{path, at, size})
			launches = append(launches, at)
		}
	}
	slices.SortStableFunc(posts, func(a, b post) int { return a.at.Compare(b.at) })
	var b strings.Builder
	b.WriteString("timestamp,site,path,count\n")
	for at := start; at.Before(start.Add(35 * 24 * time.Hour)); at = at.Add(5 * time.Minute) {
		day := 0.15 + 0.85*math.Max(0, math.Sin(math.Pi*float64(at.Hour()-6)/16))
		fmt.Fprintf(&b, "%s,example.com,/,%d\n", at.Format(time.RFC3339), poisson(rng, 30*day))
		for _, p := range posts {
			if at.Equal(p.at.Add(-23 * time.Hour)) {
				// Its author's preview the day before: a stray view.
				fmt.Fprintf(&b, "%s,example.com,%s,1\n", at.Format(time.RFC3339), p.path)
			}
		}
		for _, p := range posts {
			if at.Before(p.at) {
				break
			}
			age := at.Sub(p.at).Hours()
			rate := p.size*math.Exp2(-age/4) + 0.6*day // views an hour
			if n := poisson(rng, rate/12); n > 0 {
				fmt.Fprintf(&b, "%s,example.com,%s,%d\n", at.Format(time.RFC3339), p.path, n)
			}
		}
	}
	return b.String(), start, launches
}

// A blog's new posts do what its posts do: each launches from nothing,
// and that is its normal. Judged against the site's launches of the
// last 4 weeks, a post is told when it outgrows all but one of them: a
// record, or nearly, of which 34 lognormal launches hold about 7 (each
// of 34 was told before). A launch ten times the others is told, once,
// and resolves. A rule looking only up judges them the same: before, it
// judged each new post against its own normal of nothing, and told
// every one that reached min_count.
func TestBacktestNewPagesAreJudgedAgainstTheSitesLaunches(t *testing.T) {
	unusualEachWay(t, newPagesAgainstLaunches)
}

func newPagesAgainstLaunches(t *testing.T, r rules.Rule) {
	csv, start, launches := blogCSV(31, 20, 1)
	xs := backtestCSV(t, csv, start.Add(24*time.Hour), r)
	byEvent := map[string]int{}
	var told []string
	var big []string
	for _, x := range xs {
		byEvent[x.Event]++
		if x.Event == "fire" {
			told = append(told, fmt.Sprintf("%s %s %d", x.CrossedAt.Format("01-02 15:04"), x.Path, x.Count))
		}
		if x.Path == "/posts/21" {
			big = append(big, x.Event)
			if x.Event == "fire" && (!x.Why.Launch || x.Why.LaunchPassed == 0) {
				t.Errorf("the big launch's why: launch %v, passed %d; want a launch past the site's second largest", x.Why.Launch, x.Why.LaunchPassed)
			}
		}
	}
	t.Logf("events %v; told %s", byEvent, strings.Join(told, "; "))
	if byEvent["fire"] > 8 || byEvent["escalate"] > 8 {
		t.Errorf("%d of 34 launches told, %d escalated; want those that outgrow all but one of the site's", byEvent["fire"], byEvent["escalate"])
	}
	if got := strings.Join(big, ", "); got != "fire, resolve" {
		t.Errorf("the launch ten times the others: %s, want fire, resolve", got)
	} else if at := xs[slices.IndexFunc(xs, func(x crossing.Crossing) bool { return x.Path == "/posts/21" })].CrossedAt; at.Sub(launches[20]) > 20*time.Minute {
		t.Errorf("the big launch at %s was told at %s, want within minutes", launches[20], at)
	}
}

// A page of months whose views all come by day has none at night, in
// every window its night's normal reads; it is no new page for that. Its
// night surge is told against its own normal, though its site has had
// launches larger, and its message does not call it new.
func TestBacktestADayPageAtNightIsNoLaunch(t *testing.T) {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	surge := start.Add(33*24*time.Hour + 3*time.Hour + 20*time.Minute)
	var b strings.Builder
	b.WriteString("timestamp,site,path,count\n")
	for at := start; at.Before(start.Add(35 * 24 * time.Hour)); at = at.Add(5 * time.Minute) {
		if h := at.Hour(); h >= 8 && h < 20 {
			fmt.Fprintf(&b, "%s,example.com,/docs,%d\n", at.Format(time.RFC3339), 3) // 36 an hour
		}
		if !at.Before(surge) && at.Before(surge.Add(30*time.Minute)) {
			fmt.Fprintf(&b, "%s,example.com,/docs,%d\n", at.Format(time.RFC3339), 40)
		}
		for d, size := range map[int]int{20: 60, 24: 50, 28: 45} { // three posts launched larger
			launch := start.Add(time.Duration(d)*24*time.Hour + 10*time.Hour)
			if !at.Before(launch) && at.Before(launch.Add(time.Hour)) {
				fmt.Fprintf(&b, "%s,example.com,/posts/%d,%d\n", at.Format(time.RFC3339), d, size)
			}
		}
	}
	xs := backtestCSV(t, b.String(), start.Add(14*24*time.Hour), unusualBoth())
	var docs []crossing.Crossing
	for _, x := range xs {
		if x.Path == "/docs" {
			docs = append(docs, x)
		}
	}
	if len(docs) == 0 || docs[0].Event != "fire" || docs[0].CrossedAt.Sub(surge) > 15*time.Minute {
		t.Fatalf("/docs at night: %s, want its surge told within minutes of %s", describe(docs), surge)
	}
	if docs[0].Why.Launch {
		t.Errorf("/docs's night surge was called a new page's launch")
	}
}

// A site that launches many pages a day hears of those past 1 in 20 of
// its launches of 4 weeks, not only of the largest of the month: a news
// site's tenth article of the day is its normal, the one at the top of
// its month's is not all it wants to hear of.
func TestBacktestABusySiteHearsOneLaunchInTwenty(t *testing.T) {
	csv, start, _ := blogCSV(37, 0, 4)
	xs := backtestCSV(t, csv, start.Add(24*time.Hour), unusualBoth())
	late := start.Add(15 * 24 * time.Hour) // 4 a day: 56 launches, the rank at 3 and growing
	judged, told := 4*20, 0
	for _, x := range xs {
		if x.Event == "fire" && !x.CrossedAt.Before(late) {
			told++
		}
	}
	t.Logf("%d of the %d launches of the last 20 days told", told, judged)
	if told < 2 || told > 12 {
		t.Errorf("%d of %d launches told, want about 1 in 20 of them", told, judged)
	}
}
