package sweep

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// sealBudget bounds the sealing one sweep does.
const sealBudget = 20 * time.Second

// sealing sums whole past days into page_days (and, for the baselines,
// page_hours) and remembers how far each got: reads trust a rollup only
// up to the boundary it reached, and read minutes after it.
type sealing struct {
	counts       Counter
	lagTolerance time.Duration // days are sealed only once their late hits are in
	sweepTimeout time.Duration // sealing may take half of a sweep at most
	logger       *slog.Logger

	mu    sync.Mutex
	days  time.Time // page_days' boundary
	hours time.Time // page_hours'
}

func newSealing(counts Counter, cfg Config, logger *slog.Logger) *sealing {
	return &sealing{counts: counts, lagTolerance: cfg.LagTolerance, sweepTimeout: cfg.SweepTimeout, logger: logger}
}

// daysBefore is the day boundary up to which page_days holds every
// page's totals; zero until the first seal succeeds.
func (z *sealing) daysBefore() time.Time {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.days
}

// hoursBefore is the boundary the last SealHours reached (zero: none
// yet), for HourQuery.SealedBefore.
func (z *sealing) hoursBefore() time.Time {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.hours
}

// seal makes sure whole days older than a day and the lag tolerance are
// summed in page_days, so all-time and long windows read one row per page
// and day instead of every minute; with hours (some rule has a normal),
// in page_hours too. A failure only costs speed: reads fall back to the
// last boundary that was sealed.
func (z *sealing) seal(ctx context.Context, now time.Time, hours bool) {
	before := now.UTC().Add(-24*time.Hour - z.lagTolerance).Truncate(24 * time.Hour)
	// Sealing a backlog (a new install over months of data: ~2 s per day
	// at 3M hits a day) must not hold every sweep up, so each sweep gives
	// it a budget; the days it finished stay sealed and the next sweep
	// goes on from there.
	budget := min(sealBudget, z.sweepTimeout/2)
	sctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	if !z.rollup(ctx, sctx, rollup{name: "days", totals: "daily", fallback: "reading minutes instead", seal: z.counts.SealDays}, before, budget, &z.days) {
		return
	}
	if hours {
		// page_hours, to the same day, for the baselines of spike and
		// new_page rules (only they read it), within what is left of
		// the budget.
		z.rollup(ctx, sctx, rollup{name: "hours", totals: "hourly", fallback: "baselines read minutes instead", seal: z.counts.SealHours}, before, budget, &z.hours)
	}
}

// rollup is one of the tables sealed a day at a time: page_days, page_hours.
type rollup struct {
	name, totals string // "days", "daily": for the log
	fallback     string // what reads do while it is not sealed
	seal         func(context.Context, time.Time) (int, error)
}

// rollup seals r up to before within sctx and, once done, records before
// in sealedTo, which reads then trust. It reports whether it got there;
// running out of budget is not an error: the next sweep goes on.
func (z *sealing) rollup(ctx, sctx context.Context, r rollup, before time.Time, budget time.Duration, sealedTo *time.Time) bool {
	n, err := r.seal(sctx, before)
	if err != nil {
		if ctx.Err() == nil && sctx.Err() != nil {
			z.logger.Info("sealing "+r.name+" goes on next sweep", "before", before.Format(time.DateOnly), "budget", budget)
		} else {
			z.logger.Warn("sealing "+r.name+" failed; "+r.fallback, "before", before, "err", err)
		}
		return false
	}
	if n > 0 {
		z.logger.Info("sealed "+r.totals+" totals", "days", n, "before", before.Format(time.DateOnly))
	}
	z.mu.Lock()
	*sealedTo = before
	z.mu.Unlock()
	return true
}
