package crossing_test

import (
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
)

func TestClientsTextTellsViewsVisitorsAndTheBusiestClient(t *testing.T) {
	for _, tc := range []struct {
		c    *crossing.Clients
		want string
	}{
		{&crossing.Clients{Views: 1000, Keyed: 1000, Visitors: 3, TopViews: 820, TopShare: 0.82}, "1,000 views from 3 visitors; one client sent 82%"},
		{&crossing.Clients{Views: 1000, Keyed: 1000, Visitors: 500, TopViews: 9, TopShare: 0.009}, "1,000 views from 500 visitors"},
		{&crossing.Clients{Views: 40, Keyed: 40, Visitors: 1, TopViews: 40, TopShare: 1}, "40 views from 1 visitor"},
		{&crossing.Clients{Views: 40}, ""}, // no keys: nothing beyond the views
		{nil, ""},
	} {
		if got := tc.c.Text(); got != tc.want {
			t.Errorf("Text(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}

func TestClassesTextTellsOnlySharesWorthTelling(t *testing.T) {
	c := &crossing.Clients{Hits: 1000, Classes: []crossing.ClassShare{
		{Class: "human", Hits: 530}, {Class: "bot", Hits: 300}, {Class: "ai_crawler", Hits: 50},
		{Class: "bot", Hits: 100, Counted: true}, {Class: "unknown", Hits: 20},
	}}
	if got, want := c.ClassesText(), "bots 40% of hits, AI crawlers 5%"; got != want {
		t.Errorf("ClassesText = %q, want %q", got, want)
	}
	if got := (&crossing.Clients{Hits: 10, Classes: []crossing.ClassShare{{Class: "human", Hits: 10}}}).ClassesText(); got != "" {
		t.Errorf("people only: %q, want nothing", got)
	}
	if got := (&crossing.Clients{Mostly: crossing.MostlyOneClient}).MostlyText(); got != "mostly one client" {
		t.Errorf("MostlyText = %q", got)
	}
	if got := (&crossing.Clients{Mostly: crossing.MostlyUnidentified}).MostlyText(); got != "mostly unidentified clients" {
		t.Errorf("MostlyText = %q", got)
	}
}

// What a crossing was measured against is said by its why, for every
// kind, and a kind it does not know (a detector added later) with a
// normal is spoken of as one.
func TestWhySaysWhatItWasMeasuredAgainst(t *testing.T) {
	for _, tc := range []struct {
		why                             *crossing.Why
		threshold, newPage, againstNorm bool
	}{
		{nil, true, false, false},
		{&crossing.Why{}, true, false, false},
		{&crossing.Why{Kind: "threshold"}, true, false, false},
		{&crossing.Why{Kind: "new_page"}, false, true, false},
		{&crossing.Why{Kind: crossing.KindNoData}, false, false, false},
		{&crossing.Why{Kind: "spike"}, false, false, true},
		{&crossing.Why{Kind: "unusual"}, false, false, true},
		{&crossing.Why{Kind: "seasonal"}, false, false, true},
	} {
		if tc.why.ByThreshold() != tc.threshold || tc.why.NewPage() != tc.newPage || tc.why.AgainstNormal() != tc.againstNorm {
			t.Errorf("%+v: threshold %v, new page %v, against a normal %v; want %v, %v, %v", tc.why,
				tc.why.ByThreshold(), tc.why.NewPage(), tc.why.AgainstNormal(), tc.threshold, tc.newPage, tc.againstNorm)
		}
	}
}

// A surge heard against its hours before says those hours, and how far
// from its usual share of them it is.
func TestBeforeTextSaysTheHoursBefore(t *testing.T) {
	w := &crossing.Why{Kind: "unusual", Count: 726, HoursBefore: 806, HoursBeforeRatio: 0.477, HoursBeforeSpan: 2 * time.Hour}
	if got, want := w.BeforeText(), "806 views in the 2 hours before, where it is usually 0.48 × them (now 0.90 ×)"; got != want {
		t.Errorf("BeforeText() = %q, want %q", got, want)
	}
	if got := (&crossing.Why{Kind: "unusual", Count: 726}).BeforeText(); got != "" {
		t.Errorf("BeforeText() of a surge heard on its normal = %q, want empty", got)
	}
}
