package crossing_test

import (
	"fmt"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
)

func ExampleWhy_ExpectedText() {
	w := &crossing.Why{Kind: "unusual", Count: 640, Low: 120.4, High: 179.2, Days: 28, Weekly: true}
	fmt.Println(w.ExpectedText())
	// Its site's clocks learned from its traffic (zone: auto):
	w.Clock = "America/New_York"
	fmt.Println(w.ExpectedText())
	// A page growing 9 % a week: its normal carried forward by its trend.
	w = &crossing.Why{Kind: "unusual", Count: 640, Low: 130.2, High: 190.6, Days: 28, Weekly: true, Trend: 0.087}
	fmt.Println(w.ExpectedText())
	w = &crossing.Why{Kind: "unusual", Count: 90, Low: 8, High: 21.5, Days: 3, Burst: 10 * time.Minute}
	fmt.Println(w.ExpectedText())
	w = &crossing.Why{Kind: "unusual", Count: 28, Low: 1, High: 28.6, Days: 9, Weekly: true,
		Burst: 10 * time.Minute, BurstCount: 20, BurstBaseline: 1.67, BurstHigh: 5.2}
	fmt.Println(w.ExpectedText())
	fmt.Println(w.BurstLine())
	// Heard under its usual bursts' count, by outlasting them:
	w = &crossing.Why{Kind: "unusual", Count: 176, Low: 0, High: 39, Days: 28, Weekly: true,
		Lasted: 147 * time.Minute, BurstsLast: 85 * time.Minute}
	fmt.Println(w.ExpectedText())
	// A new page, judged in its launch against its site's launches:
	w = &crossing.Why{Kind: "unusual", Count: 1610, Low: 0, High: 2.6, Days: 28, Weekly: true, Launch: true, LaunchPassed: 168}
	fmt.Println(w.ExpectedText())
	// ... on a site that launched 112 pages in 4 weeks:
	w.LaunchPassed, w.LaunchRank = 231, 6
	fmt.Println(w.ExpectedText())
	// A page whose bursts are its normal (a newsletter), past them:
	w = &crossing.Why{Kind: "unusual", Count: 2248, Low: 0, High: 2.8, Days: 28, Weekly: true, Bursts: 11, BurstsPassed: 990}
	fmt.Println(w.ExpectedText())
	// A page judged at the level it rose to for good:
	w = &crossing.Why{Kind: "unusual", Count: 16343, Low: 4716, High: 10475, Days: 28, Weekly: true,
		Raised: 2.634, RaisedSince: time.Date(2026, 2, 25, 11, 5, 0, 0, time.UTC)}
	fmt.Println(w.ExpectedText())
	// Output:
	// expected 120–180 views, from 4 weeks of history (same weekday)
	// expected 120–180 views, from 4 weeks of history (same weekday), on America/New_York time (its readers' clocks)
	// expected 130–191 views, from 4 weeks of history (same weekday), rising 9 % a week
	// expected 8–22 views, from 3 days of history; fired on a burst of 10 minutes
	// expected 1–29 views, from 9 days of history
	// 20 views in 10 minutes, expected 0–6 (now 12.0×)
	// expected 0–39 views, from 4 weeks of history (same weekday); above it for 2 h 27 min, longer than its usual bursts (1 h 25 min)
	// expected 0–3 views, from 4 weeks of history (same weekday); a new page, larger than all but one of its site's launches in 4 weeks (the second largest: 168 views)
	// expected 0–3 views, from 4 weeks of history (same weekday); a new page, larger than 19 in 20 of its site's launches in 4 weeks (the 6th largest: 231 views)
	// expected 0–3 views, from 4 weeks of history (same weekday); its bursts are its normal: past what its 11 bursts in 4 weeks reach (990 views)
	// expected 4,716–10,475 views, from 4 weeks of history (same weekday), at the level it rose to on 25 Feb (2.6× its normal before)
}
