package sweep

import (
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

// A week of a site's minutes with hits: by day (8 to 20 UTC) every
// minute, by night none; and its data stopped at 14:00 on the last day.
// A silence by day is late within minutes; one that begins in the
// evening is not late before the morning's hours pass unheard; and the
// hours since it stopped do not teach the hazards that the site is
// quiet in the afternoon.
func TestSiteHazardsFollowTheHoursOfItsData(t *testing.T) {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	stop := start.Add(6*24*time.Hour + 14*time.Hour)
	to := start.Add(7 * 24 * time.Hour)
	var rows []traffic.SiteHour
	for h := start; h.Before(stop); h = h.Add(time.Hour) {
		if h.Hour() >= 8 && h.Hour() < 20 {
			rows = append(rows, traffic.SiteHour{Site: "shop.example", Hour: h, Minutes: 60})
		}
	}
	hz := hazardsBySite(rows, to)["shop.example"]
	if hz == nil {
		t.Fatal("no hazards for the site")
	}
	if hz[15] < hz.bar(time.Minute) || hz[3] != 0 {
		t.Errorf("hazards %v: want every afternoon minute surely heard (its last day's silence left out), none at night", hz)
	}
	// A silence from 10:00: late after its first minute.
	from := time.Date(2026, 3, 9, 10, 0, 0, 0, time.UTC)
	if at, ok := hz.quietUntil(from, from.Add(time.Hour)); !ok || at != from.Add(time.Minute) {
		t.Errorf("by day: late at %s (%v), want a minute after", at, ok)
	}
	// A silence from 20:00: nothing is expected until 08:00.
	from = time.Date(2026, 3, 9, 20, 0, 0, 0, time.UTC)
	if _, ok := hz.quietUntil(from, from.Add(11*time.Hour)); ok {
		t.Error("at night: late before the morning")
	}
	if at, ok := hz.quietUntil(from, from.Add(13*time.Hour)); !ok || at != from.Add(12*time.Hour+time.Minute) {
		t.Errorf("at night: late at %s (%v), want a minute into the morning", at, ok)
	}
}
