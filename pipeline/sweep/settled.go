package sweep

import (
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
)

// settled reports whether an observation of a page with no state under
// any rule can be left out of a sweep: its count, against its known
// normal, neither fires nor starts anything (Detector.Settled). A rule
// looking down observes every page with views in its baseline period
// each sweep; most are inside their usual range, and judging them
// changes nothing.
func (s *Sweeper) settled(set *ruleSet, r *rules.Rule, o observation, memo *settleMemo) bool {
	class := set.settleClass[o.pt.rule]
	if class < 0 {
		return false
	}
	if v, ok := memo.find(class, o); ok {
		return v
	}
	v := false
	if exp, ok := s.baselines.known(r, o); ok {
		o.exp = exp // o is a copy: what count keeps gets its normal from expect
		v = r.Detector().Settled(o.ruleObservation())
	}
	*memo = append(*memo, settleVerdict{class: class, at: o.pt.at, to: o.pt.to, count: o.count, short: o.short, settled: v})
	return v
}

// settleMemo is one page's settled verdicts in a sweep, by settle class
// and observation: 33 rules alike over a site's pages (one per section,
// say) weigh each page once, not 33 times. Asking each pair was most of
// a steady sweep's Go CPU with 3.3M rule-page pairs (BenchmarkSweepUnusual
// 3.5 -> 2.9 s a steady sweep with the memo; docs/performance.md).
type settleMemo []settleVerdict

type settleVerdict struct {
	class        int
	at, to       time.Time
	count, short uint64
	settled      bool
}

func (m settleMemo) find(class int, o observation) (settled, ok bool) {
	for _, v := range m {
		if v.class == class && v.count == o.count && v.short == o.short && v.at.Equal(o.pt.at) && v.to.Equal(o.pt.to) {
			return v.settled, true
		}
	}
	return false, false
}
