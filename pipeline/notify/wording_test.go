package notify_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/pipeline/notify"
)

func TestPredicateSaysWhatHappened(t *testing.T) {
	hn := []crossing.ReferrerShare{{Domain: "news.ycombinator.com", Share: 0.72, BaselineShare: 0.01}}
	for _, tc := range []struct {
		name string
		n    notify.Notification
		want string
	}{
		{"threshold", notify.Notification{Count: 1001, Threshold: 1000, Window: "1h"},
			"passed 1,000 views in 1h"},
		{"milestone, all time", notify.Notification{Count: 10001, Threshold: 10000, Window: "all time"},
			"passed 10,000 views"},
		{"threshold, with its why", notify.Notification{Count: 1001, Threshold: 1000, Window: "1h", Why: &crossing.Why{Kind: "threshold", Baseline: 1000}},
			"passed 1,000 views in 1h"},
		{"spike", notify.Notification{Count: 280, Threshold: 180, Window: "1h", Why: &crossing.Why{Kind: "spike", Baseline: 45, Factor: 4, Ratio: 6.22, Direction: "up"}},
			"is at 6.2× its normal: 280 views in 1h"},
		{"spike, mostly from one referrer", notify.Notification{Count: 280, Threshold: 180, Window: "1h", Why: &crossing.Why{Kind: "spike", Baseline: 45, Ratio: 6.22, Direction: "up", Referrers: hn}},
			"is at 6.2× its normal: 280 views in 1h, mostly from news.ycombinator.com"},
		{"spike, referrers spread", notify.Notification{Count: 280, Threshold: 180, Window: "1h", Why: &crossing.Why{Kind: "spike", Baseline: 45, Ratio: 6.22, Direction: "up",
			Referrers: []crossing.ReferrerShare{{Domain: "a.example", Share: 0.4}}}},
			"is at 6.2× its normal: 280 views in 1h"},
		{"spike from nothing", notify.Notification{Count: 90, Threshold: 70, Window: "1h", Why: &crossing.Why{Kind: "spike", Direction: "up"}},
			"took off from nothing: 90 views in 1h"},
		{"went quiet", notify.Notification{Count: 3, Threshold: 10, Window: "1h", Why: &crossing.Why{Kind: "spike", Baseline: 41.5, Ratio: 0.07, Direction: "down"}},
			"went quiet: 3 views in 1h, against 42 normally"},
		{"new page", notify.Notification{Count: 250, Threshold: 200, Window: "1h", Why: &crossing.Why{Kind: "new_page", Referrers: hn}},
			"took off as a new page: 250 views in 1h, mostly from news.ycombinator.com"},
		{"escalate", notify.Notification{Event: "escalate", Count: 1400, Threshold: 180, Window: "1h", Why: &crossing.Why{Kind: "spike", Step: 5, Ratio: 31.1}},
			"rose to 5× the level it fired at: 1,400 views in 1h"},
		{"escalate on a burst", notify.Notification{Event: "escalate", Count: 72, Threshold: 30, Window: "1h", Why: &crossing.Why{Kind: "unusual", Step: 4, Low: 1, High: 29,
			Burst: 10 * time.Minute, BurstCount: 60, BurstBaseline: 1.5, BurstHigh: 5}},
			"rose to 4× the level it fired at: 60 views in 10 minutes, expected 0–5 (72 views in 1h)"},
		{"escalate, threshold", notify.Notification{Event: "escalate", Count: 2100, Threshold: 1000, Window: "1h", Why: &crossing.Why{Kind: "threshold", Step: 2}},
			"rose to 2× its threshold: 2,100 views in 1h"},
		{"resolve", notify.Notification{Event: "resolve", Count: 60, Threshold: 180, Window: "1h", Why: &crossing.Why{Kind: "spike", Peak: 1400, Total: 5200}},
			"is back to normal after peaking at 1,400 views in 1h (5,200 views in all)"},
		{"resolve, threshold", notify.Notification{Event: "resolve", Count: 800, Threshold: 1000, Window: "1h", Why: &crossing.Why{Kind: "threshold", Peak: 1200}},
			"is back below 1,000 views in 1h after peaking at 1,200"},
		{"resolve of a drop", notify.Notification{Event: "resolve", Count: 40, Threshold: 10, Window: "1h", Why: &crossing.Why{Kind: "spike", Direction: "down", Peak: 2, Total: 30}},
			"is back to normal after falling to 2 views in 1h (30 views in all)"},
		{"escalate of a drop", notify.Notification{Event: "escalate", Count: 2, Threshold: 10, Window: "1h", Why: &crossing.Why{Kind: "spike", Direction: "down", Step: 2}},
			"fell to 1/2 of the level it fired at: 2 views in 1h"},
		{"escalate, no step", notify.Notification{Event: "escalate", Count: 2, Window: "1h", Why: &crossing.Why{Kind: "spike", Direction: "down"}},
			"fell further: 2 views in 1h"},
		{"unusual", notify.Notification{Count: 640, Threshold: 300, Window: "1h", Why: &crossing.Why{Kind: "unusual", Baseline: 150, Low: 120, High: 180, Ratio: 4.27, Direction: "up", Referrers: hn}},
			"is at 4.3× its normal: 640 views in 1h, expected 120–180, mostly from news.ycombinator.com"},
		{"unusual, a burst the hour hides", notify.Notification{Count: 28, Threshold: 30, Window: "1h", Why: &crossing.Why{Kind: "unusual", Baseline: 10, Low: 1, High: 28.6, Ratio: 2.8, Direction: "up",
			Burst: 10 * time.Minute, BurstCount: 20, BurstBaseline: 1.67, BurstLow: 0, BurstHigh: 5.2}},
			"is at 12.0× its normal: 20 views in 10 minutes, expected 0–6 (28 views in 1h)"},
		{"unusual, a burst from nothing", notify.Notification{Count: 31, Threshold: 30, Window: "1h", Why: &crossing.Why{Kind: "unusual", Low: 0, High: 3, Direction: "up",
			Burst: 5 * time.Minute, BurstCount: 25, BurstHigh: 0.4, Referrers: hn}},
			"took off from nothing: 25 views in 5 minutes, expected 0–1 (31 views in 1h), mostly from news.ycombinator.com"},
		{"unusual, a new page's launch", notify.Notification{Count: 1610, Threshold: 169, Window: "1h", Why: &crossing.Why{Kind: "unusual", Low: 0, High: 2.6, Direction: "up",
			Launch: true, LaunchPassed: 168, Referrers: hn}},
			"took off as a new page: 1,610 views in 1h, mostly from news.ycombinator.com"},
		{"unusual, a new page's launch on a burst", notify.Notification{Count: 402, Threshold: 169, Window: "1h", Why: &crossing.Why{Kind: "unusual", Low: 0, High: 2.6, Direction: "up",
			Launch: true, LaunchPassed: 168, Burst: 10 * time.Minute, BurstCount: 270, BurstHigh: 0.4}},
			"took off as a new page: 270 views in 10 minutes, expected 0–1 (402 views in 1h)"},
		{"unusual, went quiet", notify.Notification{Count: 3, Threshold: 60, Window: "1h", Why: &crossing.Why{Kind: "unusual", Baseline: 150, Low: 120.4, High: 180, Ratio: 0.02, Direction: "down"}},
			"went quiet: 3 views in 1h, expected 120–180"},
		{"unusual, went quiet over its hours", notify.Notification{Count: 4, Threshold: 5, Window: "1h", Why: &crossing.Why{Kind: "unusual", Baseline: 23, Low: 11, High: 39, Direction: "down",
			Burst: 3 * time.Hour, BurstCount: 15, BurstBaseline: 70, BurstLow: 43.2, BurstHigh: 102.5}},
			"went quiet: 15 views in 3 hours, expected 43–103 (4 views in 1h)"},
		{"unusual, resolve of a page that has not come back", notify.Notification{Event: "resolve", Count: 0, Threshold: 60, Window: "1h", Why: &crossing.Why{Kind: "unusual", Direction: "down",
			NewNormal: true, Since: time.Date(2026, 3, 12, 14, 30, 0, 0, time.UTC), PeakAt: time.Date(2026, 3, 12, 14, 30, 0, 0, time.UTC)}},
			"has not come back: 0 views in 1h, and its normal has followed it (told gone quiet at 14:30 UTC, 12 Mar)"},
		{"unusual, resolve of a page that stayed up", notify.Notification{Event: "resolve", Count: 6100, Threshold: 3000, Window: "1h", Why: &crossing.Why{Kind: "unusual", Direction: "up",
			NewNormal: true, Peak: 6400, Since: time.Date(2026, 4, 1, 12, 10, 0, 0, time.UTC), PeakAt: time.Date(2026, 4, 1, 15, 0, 0, 0, time.UTC)}},
			"has stayed up: 6,100 views in 1h, and its normal has followed it (told taking off at 12:10 UTC, 1 Apr)"},
		{"unusual, resolve at a new level", notify.Notification{Event: "resolve", Count: 6073, Threshold: 3000, Window: "1h", Why: &crossing.Why{Kind: "unusual", Direction: "up",
			NewNormal: true, Raised: 2.634, RaisedSince: time.Date(2026, 2, 25, 11, 15, 0, 0, time.UTC), Since: time.Date(2026, 2, 25, 12, 15, 0, 0, time.UTC)}},
			"has stayed up: 6,073 views in 1h, 2.6× its normal for 2 days: judged at that level from now (told taking off at 12:15 UTC, 25 Feb)"},
		{"unusual, at a new level", notify.Notification{Count: 16343, Threshold: 12000, Window: "1h", Why: &crossing.Why{Kind: "unusual", Direction: "up",
			Baseline: 7000, Low: 4716, High: 10475, Ratio: 2.33, Raised: 1.31, RaisedSince: time.Date(2026, 2, 25, 11, 15, 0, 0, time.UTC)}},
			"is at 2.3× its normal: 16,343 views in 1h, expected 4,716–10,475 (its normal at the level it rose to on 25 Feb, 1.3× before)"},
		{"unusual, back from a new level", notify.Notification{Event: "resolve", Count: 1141, Threshold: 3000, Window: "1h", Why: &crossing.Why{Kind: "unusual", Direction: "up",
			LevelEnded: true, Raised: 2.634, RaisedSince: time.Date(2026, 2, 25, 11, 15, 0, 0, time.UTC), Since: time.Date(2026, 2, 25, 11, 15, 0, 0, time.UTC)}},
			"is back to its old level: 1,141 views in 1h (it had stayed up at 2.6× its normal since 25 Feb)"},
		{"unusual, resolve at a lower level", notify.Notification{Event: "resolve", Count: 1034, Threshold: 1422, Window: "1h", Why: &crossing.Why{Kind: "unusual", Direction: "down",
			NewNormal: true, Raised: 0.38, RaisedSince: time.Date(2026, 4, 1, 11, 50, 0, 0, time.UTC), Since: time.Date(2026, 4, 1, 14, 50, 0, 0, time.UTC)}},
			"has stayed down: 1,034 views in 1h, 0.4× its normal for 10 days: judged at that level from now (told gone quiet at 14:50 UTC, 1 Apr)"},
		{"unusual, on a lower level", notify.Notification{Count: 2950, Threshold: 1500, Window: "1h", Why: &crossing.Why{Kind: "unusual", Direction: "up",
			Baseline: 760, Low: 520, High: 1020, Ratio: 3.88, Raised: 0.38, RaisedSince: time.Date(2026, 4, 1, 11, 50, 0, 0, time.UTC)}},
			"is at 3.9× its normal: 2,950 views in 1h, expected 520–1,020 (its normal at the level it fell to on 1 Apr, 0.4× before)"},
		{"unusual, back from a lower level", notify.Notification{Event: "resolve", Count: 2210, Threshold: 3000, Window: "1h", Why: &crossing.Why{Kind: "unusual", Direction: "up",
			LevelEnded: true, Raised: 0.38, RaisedSince: time.Date(2026, 4, 1, 11, 50, 0, 0, time.UTC), Since: time.Date(2026, 4, 1, 11, 50, 0, 0, time.UTC)}},
			"is back to its old level: 2,210 views in 1h (it had stayed down at 0.4× its normal since 1 Apr)"},
		{"unusual, resolve", notify.Notification{Event: "resolve", Count: 150, Threshold: 300, Window: "1h", Why: &crossing.Why{Kind: "unusual", Direction: "up", Peak: 900, Total: 2400}},
			"is back to normal after peaking at 900 views in 1h (2,400 views in all)"},
		{"unusual, resolve of a surge under its range", notify.Notification{Event: "resolve", Count: 28, Threshold: 300, Window: "1h", Why: &crossing.Why{Kind: "unusual", Direction: "up",
			Low: 490, High: 927, Peak: 2807}},
			"is no longer up but under its usual range: 28 views in 1h, expected 490–927, after peaking at 2,807 views in 1h"},
		{"unusual, resolve of a drop over its range", notify.Notification{Event: "resolve", Count: 1909, Threshold: 300, Window: "1h", Why: &crossing.Why{Kind: "unusual", Direction: "down",
			Low: 470, High: 1043, Peak: 27}},
			"is back, over its usual range: 1,909 views in 1h, expected 470–1,043, after falling to 27 views in 1h"},
		{"spike, mostly one client", notify.Notification{Count: 280, Threshold: 180, Window: "1h", Why: &crossing.Why{Kind: "spike", Baseline: 45, Ratio: 6.22, Direction: "up",
			Clients: &crossing.Clients{Views: 280, Keyed: 280, Visitors: 3, TopShare: 0.82, Mostly: crossing.MostlyOneClient}}},
			"is at 6.2× its normal: 280 views in 1h; mostly one client"},
		{"threshold, mostly unidentified clients", notify.Notification{Count: 1001, Threshold: 1000, Window: "1h", Why: &crossing.Why{Kind: "threshold",
			Clients: &crossing.Clients{Views: 1001, Mostly: crossing.MostlyUnidentified}}},
			"passed 1,000 views in 1h; mostly unidentified clients"},
		{"escalate, mostly one client", notify.Notification{Event: "escalate", Count: 1400, Threshold: 180, Window: "1h", Why: &crossing.Why{Kind: "spike", Step: 5,
			Clients: &crossing.Clients{Mostly: crossing.MostlyOneClient}}},
			"rose to 5× the level it fired at: 1,400 views in 1h; mostly one client"},
		{"spike, people", notify.Notification{Count: 280, Threshold: 180, Window: "1h", Why: &crossing.Why{Kind: "spike", Baseline: 45, Ratio: 6.22, Direction: "up",
			Clients: &crossing.Clients{Views: 280, Keyed: 280, Visitors: 200, TopShare: 0.01}}},
			"is at 6.2× its normal: 280 views in 1h"},
		{"no data from a site", notify.Notification{Event: "fire", Site: "example.com", Why: &crossing.Why{Kind: crossing.KindNoData, Since: time.Date(2026, 11, 27, 14, 5, 0, 0, time.UTC)}},
			"sent no data since 14:05 UTC, 27 Nov: drops on its pages are held until it does"},
		{"data again", notify.Notification{Event: "resolve", Site: "example.com", Why: &crossing.Why{Kind: crossing.KindNoData, Since: time.Date(2026, 11, 27, 14, 5, 0, 0, time.UTC)}},
			"sends data again (none had come since 14:05 UTC, 27 Nov): drops on its pages are judged again"},
		{"fire event named", notify.Notification{Event: "fire", Count: 6, Threshold: 5, Window: "5m"},
			"passed 5 views in 5m"},
	} {
		if tc.n.Why.SiteWide() && tc.n.Name() != tc.n.Site {
			t.Errorf("%s: named %q, want the site", tc.name, tc.n.Name())
		}
		if got := tc.n.Predicate(strings.TrimSpace); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A referrer domain comes from strangers: it reaches the predicate only
// through the sink's clean.
func TestPredicateCleansTheReferrer(t *testing.T) {
	n := notify.Notification{Count: 280, Window: "1h", Why: &crossing.Why{Kind: "spike", Ratio: 6, Direction: "up",
		Referrers: []crossing.ReferrerShare{{Domain: "evil.example\r\nBcc: all@example.com", Share: 0.9}}}}
	got := n.Predicate(func(s string) string { return strings.NewReplacer("\r", "?", "\n", "?").Replace(s) })
	if strings.ContainsAny(got, "\r\n") || !strings.HasSuffix(got, "mostly from evil.example??Bcc: all@example.com") {
		t.Errorf("%q", got)
	}
}

func ExampleNotification_Predicate() {
	n := notify.Notification{
		Path: "/launch", Count: 280, Threshold: 180, Window: "1h", CrossedAt: time.Now(),
		Why: &crossing.Why{Kind: "spike", Count: 280, Baseline: 45, Factor: 4, Ratio: 6.22, Direction: "up",
			Referrers: []crossing.ReferrerShare{{Domain: "news.ycombinator.com", Hits: 190, Share: 0.72}}},
	}
	fmt.Println(n.Path, n.Predicate(strings.TrimSpace))
	n.Event, n.Why.Peak, n.Why.Total = "resolve", 1400, 5200
	fmt.Println(n.Path, n.Predicate(strings.TrimSpace))
	// Output:
	// /launch is at 6.2× its normal: 280 views in 1h, mostly from news.ycombinator.com
	// /launch is back to normal after peaking at 1,400 views in 1h (5,200 views in all)
}
