package sweep

import (
	"slices"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/pipeline/sweep/pagestate"
)

// weighStateless takes an observation of a page with no state under any
// rule out of the sweep when it can: its count, against its known
// normal, neither fires nor starts anything (Detector.Settled). A rule
// looking down observes every page with views in its baseline period
// each sweep; most are inside their usual range, and judging them
// changes nothing. It reports whether it took o (otherwise the caller
// keeps it).
//
// Rules that settle a page alike (Detector.SettleKey: 33 rules alike
// over a site's pages, one per section, say) are weighed once per page:
// with the normal known, by the verdict of the first (memo); with it
// not yet known (a first sweep, or the half-hourly refresh), the first
// is kept and stands for the others (observation.alike), which are
// judged only if it is not settled once its normal is read (standIns).
// Judging each rule-page pair was most of a steady sweep's Go CPU with
// 3.3M of them, and a first sweep's memory: 15.9 GB at 1M pages
// (docs/performance.md).
func (s *Sweeper) weighStateless(set *ruleSet, r *rules.Rule, o observation, pm pageMatches, memo *settleMemo, obs map[string][]observation) bool {
	class := set.settleClass[o.pt.rule]
	if class < 0 {
		return false
	}
	if i, ok := memo.find(class, o); ok {
		v := (*memo)[i]
		if v.standIn != "" {
			in := &obs[v.standIn][v.standInAt]
			in.alike = append(in.alike, o.pt.rule)
			return true
		}
		return v.settled
	}
	v := settleVerdict{class: class, at: o.pt.at, to: o.pt.to, count: o.count, short: o.short, long: o.long}
	if exp, ok := s.baselines.known(r, o); ok {
		o.exp = exp // o is a copy: what count keeps gets its normal from expect
		v.settled = r.Detector().Settled(o.ruleObservation())
		*memo = append(*memo, v)
		return v.settled
	}
	o.key = set.key(o.pt.rule, pm)
	v.standIn, v.standInAt = o.key, len(obs[o.key])
	obs[o.key] = append(obs[o.key], o)
	*memo = append(*memo, v)
	return true
}

// hasStandIns reports whether an observation stands for others.
func hasStandIns(obs map[string][]observation) bool {
	for _, list := range obs {
		for _, o := range list {
			if len(o.alike) > 0 {
				return true
			}
		}
	}
	return false
}

// standIns judges the rules an observation stood for (alike), once
// expect gave it its normal: they are observed, with its count and
// normal, only if it is not settled.
func standIns(set *ruleSet, obs map[string][]observation) {
	var grown []string
	for _, list := range obs {
		for i := range list {
			o := &list[i]
			if len(o.alike) == 0 {
				continue
			}
			alike := o.alike
			o.alike = nil
			if set.rules[o.pt.rule].Detector().Settled(o.ruleObservation()) {
				continue
			}
			page := pagestate.PageOf(o.key)
			for _, ri := range alike {
				f := *o
				f.key, f.pt.rule = pagestate.RuleKey(set.rules[ri].Name, page), ri
				obs[f.key] = append(obs[f.key], f)
				grown = append(grown, f.key)
			}
		}
	}
	for _, k := range grown {
		slices.SortStableFunc(obs[k], func(a, b observation) int { return a.pt.at.Compare(b.pt.at) })
	}
}

// settleMemo is one page's settled verdicts in a sweep, by settle class
// and observation.
type settleMemo []settleVerdict

type settleVerdict struct {
	class              int
	at, to             time.Time
	count, short, long uint64
	settled            bool
	// standIn is the key of the observation that stands for the class
	// while its normal is unknown, at index standInAt of its list.
	standIn   string
	standInAt int
}

func (m settleMemo) find(class int, o observation) (int, bool) {
	for i, v := range m {
		if v.class == class && v.count == o.count && v.short == o.short && v.long == o.long && v.at.Equal(o.pt.at) && v.to.Equal(o.pt.to) {
			return i, true
		}
	}
	return 0, false
}
