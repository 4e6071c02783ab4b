package rules

import (
	"strings"
	"testing"
	"time"
)

// weekendsAt is daily(peak) with Saturdays and Sundays at share of it,
// on UTC's clocks, and each day's level moved by up to 14 % (a news
// day, the weather), the same way on every draw.
func weekendsAt(peak, share float64) func(time.Time) float64 {
	levels := []float64{1.0, 0.88, 1.1, 0.95, 1.14, 0.92, 1.05}
	return func(t time.Time) float64 {
		v := daily(peak)(t) * levels[(int(t.Sub(monday).Hours()/24)*3)%len(levels)]
		if wd := t.Weekday(); wd == time.Saturday || wd == time.Sunday {
			v *= share
		}
		return v
	}
}

// A page in its second and third weeks, whose weekends are at 30 % of
// its weekdays: its normal has one or two weekly samples and its last 6
// days, and a weekday's noise is read from the weekdays among those.
// Read from all 6, its Saturday and Sunday made it a page whose hours
// vary by half: 3 hours at 3 × on its second Wednesday were heard at
// 15:00, 16:00 and 17:00 on these three draws, and the first's episode
// stayed open to 9:00 the next morning. Now each is heard at its first
// sweep, 14:10, and back that evening. Its rhythm alone fires nothing.
func TestUnusualSecondWeekReadsAWeekdaysNoiseFromItsWeekdays(t *testing.T) {
	r := unusualRule(t, Unusual{})
	surge := monday.Add(9*24*time.Hour + 14*time.Hour) // its 2nd Wednesday, 14:00
	for seed := uint64(31); seed <= 33; seed++ {
		for _, times := range []float64{3, 1} {
			s := newSynth(monday, 21, seed, func(t time.Time) float64 {
				v := weekendsAt(300, 0.3)(t)
				if !t.Before(surge) && t.Before(surge.Add(3*time.Hour)) {
					v *= times
				}
				return v
			})
			got := s.run(t, r, monday.Add(7*24*time.Hour))
			switch {
			case times == 1 && len(got) > 0:
				t.Errorf("draw %d: its rhythm alone fired over its 2nd and 3rd weeks:\n%s", seed, strings.Join(got, "\n"))
			case times > 1 && (len(got) != 2 || got[0] != "fire up 03-11 Wed 14:10" || !strings.HasPrefix(got[1], "resolve up 03-11 Wed ")):
				t.Errorf("draw %d: got\n%s\nwant its fire at 14:10 and its resolve that evening", seed, strings.Join(got, "\n"))
			case times > 1 && !s.against[0].Weekly:
				t.Errorf("draw %d: the fire measured against %+v, want its weekly sample with its days", seed, s.against[0])
			}
		}
	}
}

// Which spans end on a weekend is read on the rule's clocks: 22:00 on
// a Sunday in New York (in summer time) is 02:00 on a Monday in UTC.
func TestUnusualSpansKnowTheirWeekendsOnTheRulesClocks(t *testing.T) {
	r := unusualRule(t, Unusual{})
	r.Zone = "America/New_York"
	if err := r.Validate("rule"); err != nil {
		t.Fatal(err)
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	end := time.Date(2026, 3, 30, 22, 0, 0, 0, ny) // a Monday, 22:00 in New York
	spans := r.BaselineSpans(end.UTC(), time.Time{})
	if len(spans) == 0 {
		t.Fatal("no spans")
	}
	for _, sp := range spans {
		local := sp.To.Add(-time.Minute).In(ny).Weekday()
		want := local == time.Saturday || local == time.Sunday
		if sp.Weekend != want {
			t.Errorf("span %s–%s (tag %d, ends on a %s in New York): weekend %v, want %v",
				sp.From.Format(time.RFC3339), sp.To.Format(time.RFC3339), sp.Tag, local, sp.Weekend, want)
		}
	}
	// The 2 days back (Saturday) and 1 day back (Sunday) are weekends;
	// the 3 days back (Friday) and the weekly sample (Monday) are not.
	for _, sp := range spans {
		if sp.Tag == 1 || sp.Tag == 2 {
			if !sp.Weekend {
				t.Errorf("tag %d (a day back: the weekend) not a weekend", sp.Tag)
			}
		}
		if sp.Tag == 3 || sp.Tag == 7 {
			if sp.Weekend {
				t.Errorf("tag %d (Friday, or the Monday a week back) a weekend", sp.Tag)
			}
		}
	}
}

// Advice names an unusual rule whose weeks never leave a page's second
// and third weeks, and nothing else.
func TestAdviceOfWeeksUnderThree(t *testing.T) {
	threshold := &Rule{Name: "t", Match: Match{Prefix: "/"}, Window: ParseWindow("1h"), Thresholds: Thresholds{10}, Notify: Notify{Recipients: []string{"ops@example.com"}}}
	if err := threshold.Validate("rule"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		r    *Rule
		want int
	}{
		{threshold, 0},
		{unusualRule(t, Unusual{}), 0}, // weeks 0 validated: 4
		{unusualRule(t, Unusual{Weeks: 2}), 1},
		{unusualRule(t, Unusual{Weeks: 1, Direction: Down}), 1},
		{unusualRule(t, Unusual{Weeks: 3}), 0},
		{&Rule{Name: "raw", Unusual: &Unusual{}}, 0}, // not validated: says nothing of a default it has not had
	} {
		if got := Advice(c.r); len(got) != c.want {
			t.Errorf("rule %s: %q, want %d warnings", c.r.Name, got, c.want)
		}
	}
}
