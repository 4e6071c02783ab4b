package report

import (
	"testing"
	"time"
)

func TestPeriods(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	at := time.Date(2026, 3, 30, 8, 0, 0, 0, berlin) // Monday after the spring-forward night
	for _, c := range []struct {
		period         string
		from, to, prev string
		buckets        int
	}{
		{PeriodDay, "2026-03-29T00:00:00+01:00", "2026-03-30T00:00:00+02:00", "2026-03-28T00:00:00+01:00", 23},
		{PeriodWeek, "2026-03-23T00:00:00+01:00", "2026-03-30T00:00:00+02:00", "2026-03-16T00:00:00+01:00", 7},
		{PeriodMonth, "2026-02-01T00:00:00+01:00", "2026-03-01T00:00:00+01:00", "2026-01-01T00:00:00+01:00", 28},
	} {
		cur, prev := periodsAt(c.period, at, berlin)
		if cur.From.Format(time.RFC3339) != c.from || cur.To.Format(time.RFC3339) != c.to || prev.From.Format(time.RFC3339) != c.prev || !prev.To.Equal(cur.From) {
			t.Errorf("%s: cur %s – %s, prev from %s", c.period, cur.From.Format(time.RFC3339), cur.To.Format(time.RFC3339), prev.From.Format(time.RFC3339))
		}
		if n := len(buckets(c.period, cur, berlin)); n != c.buckets {
			t.Errorf("%s: %d buckets, want %d", c.period, n, c.buckets)
		}
	}
	// Sunday belongs to the week that began on Monday.
	cur, _ := periodsAt(PeriodWeek, time.Date(2026, 3, 29, 23, 0, 0, 0, berlin), berlin)
	if cur.To.Format(time.DateOnly) != "2026-03-23" {
		t.Errorf("week before Sunday 2026-03-29 ends %s", cur.To)
	}
}
