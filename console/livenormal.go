package console

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// liveNormal is a page's normal hour on the live view.
type liveNormal struct {
	perHour float64
	// history: the page had views before (a normal of 0 is then a quiet
	// hour, not a new page).
	history bool
	from    string // where it came from, for the tooltip
}

// ratio is the hour's views against the normal. A page without history
// is ranked by its views, as against a normal of 1; one whose normal is
// nearly nothing against a tenth of a view, so a page that usually has
// none this hour and now has 5 reads 50×, not 5×.
func (n liveNormal) ratio(views uint64) float64 {
	if !n.history {
		return float64(views)
	}
	return float64(views) / max(n.perHour, 0.1)
}

// against is the ratio as the live view shows it: "6.1× normal", "0.3×
// normal", "new" only for a page without history.
func (n liveNormal) against(ratio float64) string {
	if !n.history {
		return "new"
	}
	switch {
	case ratio >= 100:
		return traffic.FormatCount(uint64(math.Round(ratio))) + "× normal"
	case ratio >= 0.1 || ratio == 0:
		return strconv.FormatFloat(ratio, 'f', 1, 64) + "× normal"
	}
	return strconv.FormatFloat(ratio, 'g', 1, 64) + "× normal"
}

// shown is the normal hour as the live view shows it: whole views, one
// decimal under 10 (a page with 0.4 views an hour is not "0"), "–"
// without history.
func (n liveNormal) shown() string {
	switch {
	case !n.history:
		return "–"
	case n.perHour < 10:
		return strconv.FormatFloat(n.perHour, 'f', 1, 64)
	}
	return traffic.FormatCount(uint64(math.Round(n.perHour)))
}

// ruleNormals makes the normal hour of the pages (busiest first, at
// most maxRuleNormals) watched by a rule with a normal of its own: the
// rule's expected count for its window ending now, from the page's
// hours, as views an hour. Pages it has none for are left out.
func (h *hub) ruleNormals(ctx context.Context, now time.Time, pages []LivePage) (map[[2]string]liveNormal, error) {
	out := map[[2]string]liveNormal{}
	if h.rules == nil {
		return out, nil
	}
	rs := h.rules()
	var (
		mu    sync.Mutex
		reads []func() error
		sem   = make(chan struct{}, ruleNormalReads)
	)
	for _, p := range pages {
		if len(reads) >= maxRuleNormals {
			break
		}
		r := normalRule(rs, p.Site, p.Path, now)
		if r == nil {
			continue
		}
		reads = append(reads, func() error {
			sem <- struct{}{}
			defer func() { <-sem }()
			// The page's own start: a page with no views before is
			// "new" in the live view, not thousands of times normal.
			hours, err := readHours(ctx, h.store, r, p.Site, p.Path, now, now, time.Time{}, clockOf(ctx, h.clocks, r, p.Site, now))
			if err != nil {
				return err
			}
			level, err := levelOf(ctx, h.states, r, p.Site, p.Path)
			if err != nil {
				return err
			}
			e := rules.AtLevel(r, level, hours.expectAt(r, now), now)
			if !e.OK {
				return nil // too little history: the day median says more
			}
			perHour := float64(time.Hour) / float64(r.Window.Rolling)
			low, high := usualRange(e)
			from := fmt.Sprintf("%s: %s views in %s usually", r.Name, rangeText(low, high), shortDuration(r.Window.Rolling))
			if level != nil && !level.Ended {
				from += ", at its new level (" + (&crossing.Why{Raised: level.Ratio()}).RaisedText() + " its old)"
			}
			mu.Lock()
			defer mu.Unlock()
			out[[2]string{p.Site, p.Path}] = liveNormal{perHour: e.Value * perHour, history: true, from: from}
			return nil
		})
	}
	return out, together(reads...)
}

// rangeText writes a usual range of counts: "80–140", or "120" when
// both ends are one.
func rangeText(low, high float64) string {
	l, h := uint64(math.Round(low)), uint64(math.Round(high))
	if l == h {
		return traffic.FormatCount(l)
	}
	return traffic.FormatCount(l) + "–" + traffic.FormatCount(h)
}
