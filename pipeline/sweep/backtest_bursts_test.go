package sweep

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// burstyCSV is pages at 0 between 20-minute bursts every 1.5 to 3.5
// days for 8 weeks, in rows per 5 minutes: each burst's size lognormal
// about 300 views with spread sigma (in logs), but one in its 7th week
// of 10 × that; between them, steady views an hour. It returns the big
// bursts' times by path.
func burstyCSV(seed uint64, pages int, sigma, steady float64) (string, time.Time, map[string]time.Time) {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(seed, 11))
	big := map[string]time.Time{}
	var b strings.Builder
	b.WriteString("timestamp,site,path,count\n")
	for p := range pages {
		path := fmt.Sprintf("/feed-%d", p+1)
		rows := map[time.Time]int{}
		bigAt := start.Add(6*7*24*time.Hour + time.Duration(rng.IntN(7*24))*time.Hour)
		for at := start.Add(time.Duration(rng.IntN(48)) * time.Hour); at.Before(start.Add(8 * 7 * 24 * time.Hour)); at = at.Add(time.Duration(36+rng.IntN(48)) * time.Hour) {
			size := 300 * math.Exp(sigma*rng.NormFloat64())
			if _, told := big[path]; !told && !at.Before(bigAt) {
				size, big[path] = 3000, at
			}
			for m := 0; m < 20; m += 5 {
				rows[at.Add(time.Duration(m)*time.Minute)] += poisson(rng, size/4)
			}
		}
		for at := start; steady > 0 && at.Before(start.Add(8*7*24*time.Hour)); at = at.Add(5 * time.Minute) {
			rows[at] += poisson(rng, steady/12)
		}
		for _, at := range slices.SortedFunc(maps.Keys(rows), time.Time.Compare) {
			if rows[at] > 0 {
				fmt.Fprintf(&b, "%s,bursts.example,%s,%d\n", at.Format(time.RFC3339), path, rows[at])
			}
		}
	}
	return b.String(), start, big
}

// A page at nothing between its bursts (a newsletter, a cron job, a
// feed polled in bursts) has its bursts as its normal, and their sizes
// vary: told whenever it passed the second highest of its 4 weeks, 8 such
// pages were told 25, 36 and 31 times in 7 weeks each of like bursts
// (sizes lognormal with a spread of 10 %, 50 % and 100 %). Judged
// against what its other bursts reach but 1 in 50 (burstBound), once
// it knows two, and never more than 1.5 × the highest of them: 5, 8 and
// 15 times, 1, 2 and 7 of them in their 2nd week (7 at 50 % while a
// burst's own first sweeps counted among its bursts). A burst of 10 × theirs
// is told on all 8 pages whose sizes vary by 10 % and 50 %, on 6 where
// they vary by 100 % (there 10 × the median is 1 in 100 of a page's own
// bursts, and the highest of its others often 5 ×). A page of 3 views an
// hour between sends of 300 is judged so at the hours whose normal is
// 10 × under its sends (burstsApart): 20 fires, 9 of them in its 2nd
// week, and all 8 of its big bursts told (25 while its site of 24 views
// an hour was late by chance at night: 5 "no data" messages; 36 fires before burstsApart;
// 21, and 7 big bursts, while a hold at hours that cannot tell was begun
// again by any look past the range: episodes then lasted days longer,
// and one held a big burst inside it).
func TestBacktestAPageAtNothingBetweenBurstsIsToldOfItsLargest(t *testing.T) {
	for _, c := range []struct {
		sigma, steady float64
		early, others int // fires in its 2nd week, and after, not of the big burst
		told          int // big bursts told, of 8
	}{
		{0.1, 0, 1, 4, 8},
		{0.5, 0, 2, 6, 8},
		{1, 0, 7, 8, 6},
		{0.5, 3, 9, 11, 8},
	} {
		csv, start, big := burstyCSV(uint64(c.sigma*10)+1, 8, c.sigma, c.steady)
		r := unusualBoth()
		r.Site = ""
		early, others, told, said := 0, 0, 0, 0
		for _, x := range backtestCSV(t, csv, start, r) {
			if x.Event != "fire" || x.CrossedAt.Before(start.Add(7*24*time.Hour)) {
				continue
			}
			switch b := big[x.Path]; {
			case x.CrossedAt.Sub(b) >= 0 && x.CrossedAt.Sub(b) < time.Hour:
				told++
				if strings.Contains(x.Why.ExpectedText(), "; its bursts are its normal: past what its ") {
					said++
				}
			case x.CrossedAt.Before(start.Add(14 * 24 * time.Hour)):
				early++
			default:
				others++
			}
		}
		if early != c.early || others != c.others || told != c.told {
			t.Errorf("sigma %.1f steady %g: %d fires in the 2nd week, %d after, %d of 8 big bursts told; want %d, %d, %d",
				c.sigma, c.steady, early, others, told, c.early, c.others, c.told)
		}
		if told > 0 && said == 0 {
			t.Errorf("sigma %.1f: no big burst told said it passed what its bursts reach", c.sigma)
		}
	}
}
