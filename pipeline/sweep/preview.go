package sweep

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// DryRun is what a sweep now would hand on, recording nothing: no seal,
// no claim, no job, no history, no progress. Crossings an earlier sweep
// claimed but did not hand on are included.
func (s *Sweeper) DryRun(ctx context.Context) ([]crossing.Crossing, error) {
	if err := s.startSync(ctx); err != nil {
		return nil, err
	}
	set, now := s.rules.current(), s.now()
	current := s.currentPoints(set, now)
	obs, _, err := s.count(ctx, set, current, false)
	if err != nil {
		return nil, err
	}
	verdicts, err := s.judge(ctx, set, obs, current)
	if err != nil {
		return nil, err
	}
	var out []crossing.Crossing
	for _, v := range verdicts {
		out = append(out, v.pending...)
		out = append(out, v.fired...)
	}
	return out, nil
}

// Backtest replays the stored per-minute counts since a time through the
// rules, each state learnt as a sweeper running all along had it, and
// returns what would have fired, in time order. It reads ClickHouse
// only and writes nothing. See replay for when counts are judged.
func (s *Sweeper) Backtest(ctx context.Context, since time.Time) ([]crossing.Crossing, error) {
	set, now := s.rules.current(), s.now()
	since = since.Truncate(time.Minute)
	// An all-time window's count at since is its base, read from the
	// sealed days rather than replayed from the first minute.
	basePts := map[int]point{}
	for i, r := range set.rules {
		if r.Window.Kind == rules.AllTime {
			basePts[i] = point{rule: i, at: since, to: since}
		}
	}
	base := map[string]uint64{}
	if len(basePts) > 0 {
		obs, _, err := s.count(ctx, set, slices.Collect(maps.Values(basePts)), true)
		if err != nil {
			return nil, err
		}
		for k, list := range obs {
			base[k] = list[len(list)-1].count
		}
	}
	return replay(ctx, s.counts, nil, set, base, since, now, s.cfg.DataLateAfter, s.logger)
}

// Backtest replays per-minute counts from src (a counts file, say) since
// a time through rules that LoadRules validated, each state learnt from
// the rows before since that it remembers (see replay), and returns what
// would have fired by now, in time order. It needs neither NATS nor
// ClickHouse. A site's data is late, and its drops
// held, once no row for so long is unlikely at those hours of the day
// (and never before the default data_late_after, nor two of its rows'
// steps).
func Backtest(ctx context.Context, src MinuteSource, rs []rules.Rule, since, now time.Time, logger *slog.Logger) ([]crossing.Crossing, error) {
	return BacktestPages(ctx, src, nil, rs, since, now, logger)
}

// BacktestPages is Backtest of the rows keep accepts (nil: all). The
// rows it turns away, of other pages, still say when each site's data
// flowed: a site is late only when none of its pages has rows, as in a
// sweep, so a quiet page tried alone does not make its site "send no
// data" between its views. keep may note the rows it accepts.
func BacktestPages(ctx context.Context, src MinuteSource, keep func(site, path string, minute time.Time, hits uint64) bool, rs []rules.Rule, since, now time.Time, logger *slog.Logger) ([]crossing.Crossing, error) {
	return replay(ctx, src, keep, newRuleSet(rs), nil, since.Truncate(time.Minute), now, DefaultConfig().DataLateAfter, logger)
}
