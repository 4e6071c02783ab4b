package syntheval

import (
	"slices"
	"testing"
	"time"
)

func TestPagesAreDrawnAlikeFromOneSeed(t *testing.T) {
	p := Pages()[0]
	a, b := p.Series(7), p.Series(7)
	if !slices.Equal(a.Values, b.Values) || !slices.EqualFunc(a.Times, b.Times, time.Time.Equal) {
		t.Fatal("two draws from one seed differ")
	}
	if c := p.Series(8); slices.Equal(a.Values, c.Values) {
		t.Fatal("two seeds drew the same page")
	}
}

func TestEveryPageHasRowsEveryStepAndItsWindowsInside(t *testing.T) {
	for _, p := range Pages() {
		s := p.Series(p.Seed())
		if want := p.Days * 24 * int(time.Hour/p.Step); len(s.Times) != want {
			t.Errorf("%s: %d rows, want %d", p.Name, len(s.Times), want)
		}
		for _, w := range s.Windows {
			if w[0].Before(p.Probation()) || w[1].After(s.Times[len(s.Times)-1].Add(2*time.Hour)) {
				t.Errorf("%s: window %v outside the scored span", p.Name, w)
			}
		}
	}
}

// An event scales the rows it covers, in part for a row it covers in
// part, and adds its views over them.
func TestEventsScaleTheirRows(t *testing.T) {
	p := base("t", 3000, 30*time.Minute)
	p.DayNoise, p.HourNoise = 0, 0
	quiet := p.Series(1)
	p.Events = []Event{
		{At: 2*day + 12*hour, Len: hour, Factor: 5},
		{At: 3*day + 12*hour, Len: 10 * time.Minute, Factor: 1, Views: 3000},
	}
	loud := p.Series(1)
	row := func(at time.Duration) int { return int(at / p.Step) }
	if r := float64(loud.Values[row(2*day+12*hour)]) / float64(quiet.Values[row(2*day+12*hour)]); r < 4 || r > 6 {
		t.Errorf("a row inside a 5 × event: %.1f ×", r)
	}
	if d := int(loud.Values[row(3*day+12*hour)]) - int(quiet.Values[row(3*day+12*hour)]); d < 2800 || d > 3200 {
		t.Errorf("a row holding an event of 3,000 views: +%d", d)
	}
	if loud.Values[row(3*day+13*hour)] != quiet.Values[row(3*day+13*hour)] {
		t.Error("a row after the events changed")
	}
}
