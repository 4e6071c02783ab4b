package console

import (
	"net/http"
	"sort"
	"strconv"
	"time"
)

const (
	historyPageSize = 50
	// maxOffset caps paging: LIMIT/OFFSET reads the skipped rows, so a
	// page deeper than this is asked for by narrowing the time instead.
	maxOffset = 10_000
	// defaultHistorySpan is how far back the history looks unless told:
	// a bound on what ClickHouse reads.
	defaultHistorySpan = 30 * 24 * time.Hour
	// maxHistorySpan bounds from and to asked for: a viewer's query of
	// years would read every crossing and notification kept.
	maxHistorySpan = 92 * 24 * time.Hour
)

// historyView is the history page's data and its API answer.
type historyView struct {
	Filter    historyFilter  `json:"filter"`
	Crossings []crossingView `json:"crossings"`
	Actions   []actionView   `json:"actions"`
	Outcomes  []string       `json:"-"`
	Prev      int            `json:"prev_offset"` // -1: none
	Next      int            `json:"next_offset"` // -1: none
}

type historyFilter struct {
	Site    string `json:"site"`
	Rule    string `json:"rule"`
	Path    string `json:"path"`
	Outcome string `json:"outcome"`
	From    string `json:"from"`
	To      string `json:"to"`
	Offset  int    `json:"offset"`
}

type crossingView struct {
	Key       string `json:"key"`
	Rule      string `json:"rule"`
	Site      string `json:"site"`
	Path      string `json:"path"`
	Window    string `json:"window"`
	Threshold uint64 `json:"threshold"`
	// Judged is what the crossing was judged against, in words
	// (judgedText): the threshold, or the page's usual range.
	Judged    string        `json:"judged"`
	Count     uint64        `json:"count"`
	CrossedAt time.Time     `json:"crossed_at"`
	Shown     string        `json:"-"`
	Outcomes  []outcomeView `json:"outcomes"`
	// SiteWide marks a crossing of a whole site ("no data" and its
	// resolve): no page to link, no window, and a Count of 0 that is no
	// measured count of views.
	SiteWide bool `json:"site_wide,omitempty"`
}

type outcomeView struct {
	At       time.Time `json:"at"`
	Shown    string    `json:"-"`
	Outcome  string    `json:"outcome"`
	SMTPCode uint16    `json:"smtp_code,omitempty"`
	Error    string    `json:"error,omitempty"`
	Worker   string    `json:"worker,omitempty"`
}

type actionView struct {
	Action
	Shown string `json:"-"`
}

// outcomeNames are the outcomes the filter offers (domain/crossing's).
var outcomeNames = []string{"sent", "duplicate", "deferred", "handed_off", "rate_limited", "failed", "dead_lettered", "silenced", "held", "quiet", "unsubscribed"}

// timeLayouts are what the from and to fields take: the form's
// datetime-local, or RFC 3339.
var timeLayouts = []string{"2006-01-02T15:04", time.RFC3339, "2006-01-02"}

func (s *frame) parseTime(v string) (time.Time, bool) {
	for _, l := range timeLayouts {
		if t, err := time.ParseInLocation(l, v, s.zone); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// historyPages are the crossings and what was done with them.
type historyPages struct{ *frame }

func (s *historyPages) historyPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := historyFilter{Site: q.Get("site"), Rule: q.Get("rule"), Path: q.Get("path"), Outcome: q.Get("outcome"), From: q.Get("from"), To: q.Get("to")}
	now := s.deps.Now()
	hq := HistoryQuery{Site: f.Site, Rule: f.Rule, Path: f.Path, Outcome: f.Outcome, To: now.Add(time.Minute), From: now.Add(-defaultHistorySpan), Limit: historyPageSize + 1}
	if f.From != "" {
		t, ok := s.parseTime(f.From)
		if !ok {
			s.fail(w, r, http.StatusBadRequest, "from: not a time (2006-01-02T15:04 or RFC 3339)")
			return
		}
		hq.From = t
	}
	if f.To != "" {
		t, ok := s.parseTime(f.To)
		if !ok {
			s.fail(w, r, http.StatusBadRequest, "to: not a time (2006-01-02T15:04 or RFC 3339)")
			return
		}
		hq.To = t
	}
	// An hour to spare: from 92 days ago to now (the default to, a
	// minute ahead) is 92 days.
	if hq.To.Sub(hq.From) > maxHistorySpan+time.Hour {
		s.fail(w, r, http.StatusBadRequest, "from, to: at most 92 days apart; look further back a stretch at a time")
		return
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxOffset {
			s.fail(w, r, http.StatusBadRequest, "offset: must be 0 to 10000; narrow the time range to look further")
			return
		}
		f.Offset, hq.Offset = n, n
	}
	xs, err := s.deps.Store.Crossings(r.Context(), hq)
	if err != nil {
		s.failErr(w, r, "reading the crossings", err)
		return
	}
	v := historyView{Filter: f, Outcomes: outcomeNames, Prev: -1, Next: -1, Crossings: []crossingView{}, Actions: []actionView{}}
	if len(xs) > historyPageSize {
		xs = xs[:historyPageSize]
		if f.Offset+historyPageSize <= maxOffset {
			v.Next = f.Offset + historyPageSize
		}
	}
	if f.Offset > 0 {
		v.Prev = max(f.Offset-historyPageSize, 0)
	}
	v.Crossings, err = s.withOutcomes(r, xs)
	if err != nil {
		s.failErr(w, r, "reading the notification outcomes", err)
		return
	}
	whys, err := s.whysOf(r.Context(), v.Crossings)
	if err != nil {
		s.failErr(w, r, "reading why the crossings were made", err)
		return
	}
	withJudged(v.Crossings, whys)
	if f.Offset == 0 {
		acts, err := s.deps.Store.Actions(r.Context(), hq.From, 50)
		if err != nil {
			s.failErr(w, r, "reading the operators' actions", err)
			return
		}
		for _, a := range acts {
			v.Actions = append(v.Actions, actionView{Action: a, Shown: s.timeIn(a.At)})
		}
	}
	s.render(w, r, "history", "History", v)
}

// withOutcomes pairs crossings with what the workers did with them.
func (s *frame) withOutcomes(r *http.Request, xs []CrossingRow) ([]crossingView, error) {
	out := make([]crossingView, 0, len(xs))
	if len(xs) == 0 {
		return out, nil
	}
	keys := make([]string, len(xs))
	for i, x := range xs {
		keys[i] = x.Key
	}
	os, err := s.deps.Store.Outcomes(r.Context(), keys)
	if err != nil {
		return nil, err
	}
	byKey := map[string][]outcomeView{}
	for _, o := range os {
		byKey[o.Key] = append(byKey[o.Key], outcomeView{At: o.At, Shown: s.timeIn(o.At), Outcome: o.Outcome, SMTPCode: o.SMTPCode, Error: o.Error, Worker: o.Worker})
	}
	for _, v := range byKey {
		sortOutcomes(v)
	}
	for _, x := range xs {
		out = append(out, crossingView{Key: x.Key, Rule: x.Rule, Site: x.Site, Path: x.Path, Window: x.Window,
			Threshold: x.Threshold, Count: x.Count, CrossedAt: x.CrossedAt, Shown: s.timeIn(x.CrossedAt),
			Outcomes: append([]outcomeView{}, byKey[x.Key]...)})
	}
	return out, nil
}

// outcomeStage orders outcomes recorded in the same second: the
// notifications table keeps whole seconds, and ClickHouse broke such ties
// by name, so a delivery that failed (550) and was dead-lettered at once
// read "dead_lettered, failed". A crossing's outcomes read oldest first,
// and within a second in the order they happen: an attempt's result,
// then its dead-lettering, then an operator's action on the dead letter.
func outcomeStage(outcome string) int {
	switch outcome {
	case "dead_lettered":
		return 1
	case "retried", "discarded":
		return 2
	}
	return 0
}

func sortOutcomes(os []outcomeView) {
	sort.SliceStable(os, func(i, j int) bool {
		if !os[i].At.Equal(os[j].At) {
			return os[i].At.Before(os[j].At)
		}
		return outcomeStage(os[i].Outcome) < outcomeStage(os[j].Outcome)
	})
}
