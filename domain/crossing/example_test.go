package crossing_test

import (
	"fmt"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
)

func ExampleWhy_ExpectedText() {
	w := &crossing.Why{Kind: "unusual", Count: 640, Low: 120.4, High: 179.2, Days: 28, Weekly: true}
	fmt.Println(w.ExpectedText())
	w = &crossing.Why{Kind: "unusual", Count: 90, Low: 8, High: 21.5, Days: 3, Burst: 10 * time.Minute}
	fmt.Println(w.ExpectedText())
	// Output:
	// expected 120–180 views, from 4 weeks of history (same weekday)
	// expected 8–22 views, from 3 days of history; fired on a burst of 10 minutes
}
