package syntheval

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/internal/nabeval"
	"github.com/pagewatch/pagewatch/pipeline/sweep"
)

// Result is one page's score.
type Result struct {
	Page   Page
	Score  nabeval.Score
	Detail nabeval.Detail
	// Probation are the false alarms inside the page's probation, not
	// scored: what a site sees in the days after installing pagewatch,
	// while each page's normal has no week behind it.
	Probation []time.Time
	// NAB is the page scored as NAB's code scores a series, its
	// probation min(15 %, 750 rows) (nabeval.Series.ProbationEnd): a
	// page of 8 weeks is scored after 2.6 days of 5-minute rows, 7.8 of
	// 15-minute rows and 8.4 of 30-minute rows. Real series are scored
	// so; the headline (Score) leaves out a page's first week whatever
	// its rows.
	NAB nabeval.Score
	// Longest is the page's longest episode, from its fire to its
	// resolve or, never resolved, to the page's last row: an episode
	// that does not end hides every event after it.
	Longest time.Duration
}

// Probation is how much of a page's start is not scored: a week, or 15 %
// of a shorter page (NAB's share), as a page's first days have no normal
// to be judged against.
func (p Page) Probation() time.Time {
	span := time.Duration(p.Days) * day
	return p.Start.Add(min(week, span*15/100))
}

// Seed is the page's seed, from its name: a page is drawn alike
// whatever pages are added beside it.
func (p Page) Seed() uint64 {
	h := fnv.New64a()
	h.Write([]byte(p.Name))
	return h.Sum64()
}

// Site is the site a page is the one page of: each its own, so one
// page's late data says nothing of another's.
func (p Page) Site() string { return p.Name + ".example" }

// WriteCounts writes the rows of the page named name, drawn as Score
// draws them, as a counts file.
func WriteCounts(w io.Writer, name string) error {
	for _, p := range Pages() {
		if p.Name == name {
			fmt.Fprintln(w, "timestamp,site,path,count")
			return writeCounts(w, p, p.Series(p.Seed()))
		}
	}
	return fmt.Errorf("no page %q", name)
}

func writeCounts(w io.Writer, p Page, s nabeval.Series) error {
	bw := bufio.NewWriter(w)
	for j, t := range s.Times {
		fmt.Fprintf(bw, "%s,%s,%s,%d\n", t.Format(time.RFC3339), p.Site(), s.Path(), s.Values[j])
	}
	return bw.Flush()
}

// Score backtests rs over every page, each drawn from its own seed, and scores each as nabeval does: an event is caught
// by an alarm (a fire or an escalation) inside its window, and an alarm
// episode beginning outside every window is a false alarm.
func Score(ctx context.Context, pages []Page, rs []rules.Rule, logger *slog.Logger) ([]Result, error) {
	series := make([]nabeval.Series, len(pages))
	var b bytes.Buffer
	fmt.Fprintln(&b, "timestamp,site,path,count")
	for i, p := range pages {
		series[i] = p.Series(p.Seed())
		if err := writeCounts(&b, p, series[i]); err != nil {
			return nil, err
		}
	}
	cf, err := sweep.ReadCounts(&b, "generated counts")
	if err != nil {
		return nil, err
	}
	xs, err := sweep.Backtest(ctx, cf, rs, cf.First, cf.Last.Add(time.Minute), logger)
	if err != nil {
		return nil, fmt.Errorf("backtest: %w", err)
	}
	var alarms []nabeval.Alarm
	for _, x := range xs {
		if x.Event != "resolve" {
			alarms = append(alarms, nabeval.Alarm{Rule: x.Rule, Site: x.Site, Path: x.Path, FiredAt: x.CrossedAt, Kind: x.Event})
		}
	}
	ends := map[string]time.Time{}
	for i, p := range pages {
		if n := len(series[i].Times); n > 0 {
			ends[p.Site()] = series[i].Times[n-1]
		}
	}
	longest := longestEpisodes(xs, ends)
	out := make([]Result, len(pages))
	for i, p := range pages {
		sc, d := nabeval.ScoreDetailAfter(series[i], alarms, p.Probation())
		out[i] = Result{Page: p, Score: sc, Detail: d, Longest: longest[p.Site()]}
		out[i].NAB, _ = nabeval.ScoreDetailAfter(series[i], alarms, series[i].ProbationEnd())
		_, whole := nabeval.ScoreDetailAfter(series[i], alarms, p.Start)
		for _, t := range whole.FalseAlarms {
			if t.Before(p.Probation()) {
				out[i].Probation = append(out[i].Probation, t)
			}
		}
	}
	return out, nil
}

// longestEpisodes is each site's (each page's) longest episode in xs:
// fire to resolve, or to its site's last row (ends) if it never
// resolved.
func longestEpisodes(xs []crossing.Crossing, ends map[string]time.Time) map[string]time.Duration {
	open := map[string]crossing.Crossing{}
	out := map[string]time.Duration{}
	note := func(site string, d time.Duration) { out[site] = max(out[site], d) }
	for _, x := range xs {
		switch x.Event {
		case "", "fire":
			open[x.Key] = x
		case "resolve":
			if f, ok := open[strings.TrimSuffix(x.Key, ".resolved")]; ok {
				note(f.Site, x.CrossedAt.Sub(f.CrossedAt))
				delete(open, f.Key)
			}
		}
	}
	for _, f := range open {
		note(f.Site, ends[f.Site].Sub(f.CrossedAt))
	}
	return out
}
