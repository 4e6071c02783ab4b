// Package backtest is what the sweeper prints without recording anything:
// the crossings a backtest finds since a time (from the stored counts or
// a counts file) or a dry run finds now, and the rules `sweeper check`
// lists. The commands in cmd/sweeper wire it to the sweep and the config.
package backtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/pipeline/sweep"
)

// Query is a backtest as `sweeper backtest` is asked for it.
type Query struct {
	// Since is how far back: a duration ("7d", "36h") or an RFC 3339
	// time; "" is 7 days, or with Counts the file's start.
	Since string
	// Counts is a counts CSV file (timestamp,site,path,count, or
	// timestamp,value for one series: sweep.ReadCounts) to replay
	// instead of the stored counts; "": the stored counts.
	Counts string
	// Format is text (a table and a summary) or json (one object per
	// line).
	Format string
}

// InputError is a bad flag value or counts file, named by its flag
// ("--since: ..."): the command's usage error, not a failure.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputError(format string, args ...any) error {
	return &InputError{Err: fmt.Errorf(format, args...)}
}

// Check says whether the format is one Print knows.
func (q Query) Check() error {
	if q.Format != "text" && q.Format != "json" {
		return inputError("--format: want text or json, got %q", q.Format)
	}
	return nil
}

// From is where a backtest of the stored counts starts: Since before now
// (7 days by default).
func (q Query) From(now time.Time) (time.Time, error) {
	s := q.Since
	if s == "" {
		s = "7d"
	}
	from, err := ParseSince(s, now)
	if err != nil {
		return from, inputError("--since: %w", err)
	}
	return from, nil
}

// File replays the counts file q.Counts under rs: the history ends with
// its last row. It returns the crossings and when the backtest started.
func (q Query) File(ctx context.Context, rs []rules.Rule, logger *slog.Logger) ([]crossing.Crossing, time.Time, error) {
	f, err := os.Open(q.Counts)
	if err != nil {
		return nil, time.Time{}, inputError("--counts: %w", err)
	}
	defer f.Close()
	cf, err := sweep.ReadCounts(bufio.NewReaderSize(f, 1<<20), q.Counts)
	if err != nil {
		return nil, time.Time{}, inputError("--counts: %w", err)
	}
	if cf.Missing > 0 {
		logger.Warn("counts file rows without a count left out, as if not written (a file of one series: a hole in its data, no drop judged over it)",
			"file", q.Counts, "rows", cf.Missing, "first_line", cf.MissingLine)
	}
	if cf.Repeated > 0 {
		logger.Warn("counts file rows at the time of an earlier row of the same page were added to it: a file concatenated twice, or several series in one column of counts (give each its own path: timestamp,site,path,count)",
			"file", q.Counts, "rows", cf.Repeated, "first_line", cf.RepeatedLine)
	}
	if cf.Totals > 0 {
		logger.Info("counts file totals row left out", "file", q.Counts, "line", cf.Totals)
	}
	step := cf.RowStep()
	for _, r := range rs {
		if w := r.Window.Rolling; w > 0 && step > w {
			logger.Warn("counts file rows are further apart than the rule's window: each window holds one row or none, judged as that window's views",
				"file", q.Counts, "rows_every", step.String(), "rule", r.Name, "window", w.String())
		}
	}
	now := cf.Last.Add(time.Minute)
	from := cf.First
	if q.Since != "" {
		if from, err = ParseSince(q.Since, now); err != nil {
			return nil, from, inputError("--since: %w", err)
		}
	}
	xs, err := sweep.Backtest(ctx, cf, rs, from, now, logger)
	return xs, from, err
}

// Learnt is how far before since a backtest of rs judged without
// reporting, to learn what their pages remember (rules.Remembers): 0
// when none of them remembers anything.
func Learnt(rs []rules.Rule) time.Duration {
	var d time.Duration
	for i := range rs {
		d = max(d, rules.Remembers(&rs[i]))
	}
	return d
}

// LearntText says learnt in whole weeks, or in days: "4 weeks", "40 days".
func LearntText(learnt time.Duration) string {
	const week = 7 * 24 * time.Hour
	if learnt%week == 0 {
		return strconv.Itoa(int(learnt/week)) + " weeks"
	}
	return strconv.Itoa(int(learnt/(24*time.Hour))) + " days"
}

// Print writes a backtest's crossings since from in q.Format: a table
// and a summary per rule, or one JSON object per line. learnt
// (Learnt), unless 0, is said under the summary: a message before from
// was judged and left out, so an episode begun then shows its resolve
// alone.
func (q Query) Print(out io.Writer, xs []crossing.Crossing, from time.Time, learnt time.Duration) error {
	if q.Format == "json" {
		return printJSON(out, xs)
	}
	PrintCrossings(out, xs)
	perRule := map[string]int{}
	for _, x := range xs {
		perRule[x.Rule]++
	}
	fmt.Fprintf(out, "since %s: %d crossing(s)", from.UTC().Format(time.RFC3339), len(xs))
	for _, rule := range slices.Sorted(maps.Keys(perRule)) {
		fmt.Fprintf(out, "; %s %d", rule, perRule[rule])
	}
	fmt.Fprintln(out)
	if learnt > 0 {
		fmt.Fprintf(out, "unusual rules learnt what their pages remember (bursts, launches, an open episode, a new level) from the %s before, as far as the data goes, unreported, as a sweeper running all along; an episode begun then may show its resolve alone\n",
			LearntText(learnt))
	}
	return nil
}

// line is one crossing of a backtest as --format json prints it.
type line struct {
	Rule     string    `json:"rule"`
	Site     string    `json:"site"`
	Path     string    `json:"path"`
	FiredAt  time.Time `json:"fired_at"`
	Kind     string    `json:"kind"` // fire, escalate or resolve
	Count    uint64    `json:"count"`
	Baseline *float64  `json:"baseline"` // null for threshold rules
	// Expected, Low and High are the page's normal and its usual range
	// (unusual rules; expected is the baseline for spike rules); Direction
	// is up or down for rules with a normal.
	Expected  *float64 `json:"expected,omitempty"`
	Low       *float64 `json:"low,omitempty"`
	High      *float64 `json:"high,omitempty"`
	Direction string   `json:"direction,omitempty"`
	// Burst is, for a message that fired on a burst of minutes, those
	// minutes: their count, normal and usual range.
	Burst *burstLine `json:"burst,omitempty"`
	// Lasted is, for a message heard under the page's own usual bursts'
	// count because it outlasted them, how long it had been past its
	// normal and how long those bursts last, in minutes.
	Lasted *lastedLine `json:"lasted,omitempty"`
	// Before is, for a surge heard against the hours before its window,
	// those hours' views and length, and what the window usually is of
	// them on the page's past days.
	HoursBefore *beforeLine `json:"hours_before,omitempty"`
	// NewNormal marks a resolve whose page had not come back: its normal
	// followed it, down or up.
	NewNormal bool `json:"new_normal,omitempty"`
	// Raised is the multiple of its normal a page that rose for good
	// was judged at (on a resolve with new_normal: the level it is
	// judged at from then; with level_ended: the level it left).
	Raised     float64 `json:"raised,omitempty"`
	LevelEnded bool    `json:"level_ended,omitempty"`
	// Launch marks a new page told in its launch, against its site's
	// launches of 4 weeks; LaunchPassed is the one at LaunchRank of those
	// (the 2nd largest, or 1 in 20 of a site that launches many)
	// (views in the window), which it passed (0: the site had fewer
	// than two).
	Launch       bool   `json:"launch,omitempty"`
	LaunchPassed uint64 `json:"launch_passed,omitempty"`
	LaunchRank   int    `json:"launch_rank,omitempty"`
	// Bursts marks a page whose bursts are its normal told against
	// them: BurstsPassed is what those bursts of 4 weeks reach (views in
	// the window), which it passed.
	Bursts       int    `json:"bursts,omitempty"`
	BurstsPassed uint64 `json:"bursts_passed,omitempty"`
	// Since is, for a "no data" message (path ""), the site's newest
	// minute with data.
	Since *time.Time `json:"since,omitempty"`
	Key   string     `json:"key"`
}

type burstLine struct {
	Minutes  int     `json:"minutes"`
	Count    uint64  `json:"count"`
	Expected float64 `json:"expected"`
	Low      float64 `json:"low"`
	High     float64 `json:"high"`
}

type beforeLine struct {
	Minutes int     `json:"minutes"`
	Count   uint64  `json:"count"`
	Ratio   float64 `json:"usual_ratio"`
}

type lastedLine struct {
	Minutes       int `json:"minutes"`
	BurstsMinutes int `json:"bursts_minutes"`
}

func printJSON(out io.Writer, xs []crossing.Crossing) error {
	enc := json.NewEncoder(out)
	for _, x := range xs {
		l := line{Rule: x.Rule, Site: x.Site, Path: x.Path, FiredAt: x.CrossedAt.UTC(), Kind: x.Event, Count: x.Count, Key: x.Key}
		if l.Kind == "" {
			l.Kind = string(rules.EventFire)
		}
		switch {
		case x.Why.SiteWide():
			since := x.Why.Since.UTC()
			l.Since = &since
		case !x.Why.ByThreshold():
			b := x.Why.Baseline
			l.Baseline, l.Expected, l.Direction, l.NewNormal = &b, &b, x.Why.Direction, x.Why.NewNormal
			l.Raised, l.LevelEnded = x.Why.Raised, x.Why.LevelEnded
			l.Launch, l.LaunchPassed, l.LaunchRank = x.Why.Launch, x.Why.LaunchPassed, x.Why.LaunchRank
			l.Bursts, l.BurstsPassed = x.Why.Bursts, x.Why.BurstsPassed
			if x.Why.High > 0 {
				lo, hi := x.Why.Low, x.Why.High
				l.Low, l.High = &lo, &hi
			}
			if w := x.Why; w.Burst > 0 && w.BurstHigh > 0 {
				l.Burst = &burstLine{Minutes: int(w.Burst / time.Minute), Count: w.BurstCount,
					Expected: w.BurstBaseline, Low: w.BurstLow, High: w.BurstHigh}
			}
			if w := x.Why; w.HoursBefore > 0 {
				l.HoursBefore = &beforeLine{Minutes: int(w.HoursBeforeSpan / time.Minute), Count: w.HoursBefore, Ratio: w.HoursBeforeRatio}
			}
			if w := x.Why; w.Lasted > 0 {
				l.Lasted = &lastedLine{Minutes: int(w.Lasted / time.Minute), BurstsMinutes: int(w.BurstsLast / time.Minute)}
			}
		}
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	return nil
}

// ParseSince reads "7d", "36h" or an RFC 3339 time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf(`want a duration ("7d", "36h") or an RFC 3339 time, got %q`, s)
	}
	return now.Add(-d), nil
}
