package console

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/console/chart"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/pipeline/sweep"
	"github.com/pagewatch/pagewatch/pipeline/sweep/backtest"
)

// Trying a rule is a backtest (sweep.Backtest, as `sweeper backtest`
// runs) of a rule pasted on the rules page over the stored minutes. It
// reads ClickHouse and nothing else: no sweeper, no NATS, no message. A
// rule over every page of a big site must not hold ClickHouse, so a try
// is bounded in time, in pages and in how many run at once.
const (
	tryMaxPages    = 50               // pages replayed, the most viewed first
	tryTimeout     = 20 * time.Second // a try's reads, all of them
	tryMaxMessages = 500              // would-be messages listed (all are counted)
	tryCharts      = 6                // pages charted, those with the most messages
	tryMaxRules    = 10               // rules in one try
)

// tryDays are the periods offered: a week, a month.
var tryDays = []int{7, 30}

// tryExample is the form's text when no rule is given.
const tryExample = `name: try-spike
match: {prefix: /}
window: 1h
spike: {factor: 4, min_count: 50, baseline: {same_time: {days: 7}}}
notify_on: [fire, escalate, resolve]
notify: {recipients: [ops@example.com]}
`

// tryPages is the rules page's "try a rule": the form and its result.
type tryPages struct {
	*frame
	// busy holds one token while a try runs: one at a time per console,
	// the others answered 429.
	busy chan struct{}
}

func newTryPages(f *frame) *tryPages { return &tryPages{frame: f, busy: make(chan struct{}, 1)} }

type tryView struct {
	YAML      string     `json:"-"`
	Days      int        `json:"days"`
	Periods   []int      `json:"-"`
	MaxPages  int        `json:"-"`
	Timeout   string     `json:"-"`
	Available bool       `json:"available"`
	Ran       bool       `json:"ran"`
	Errors    []tryError `json:"errors,omitempty"`
	// Notes say what the backtest left out: pages beyond the bound,
	// rules counting visitors, messages beyond those listed.
	Notes    []string     `json:"notes,omitempty"`
	From     string       `json:"from,omitempty"`
	To       string       `json:"to,omitempty"`
	Pages    int          `json:"pages"`
	PagesOut int          `json:"pages_left_out"`
	Total    int          `json:"total"`
	Weeks    []tryWeek    `json:"weeks,omitempty"`
	Messages []tryMessage `json:"messages,omitempty"`
	Charts   []tryChart   `json:"-"`
	// Learnt is how far before From the tried rules' pages learnt what
	// their states remember ("4 weeks"; "": none of them remembers).
	Learnt string `json:"learnt,omitempty"`
}

// tryError is one problem with the pasted rule, named by its key.
type tryError struct {
	Key     string `json:"key"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

type tryWeek struct {
	From     string `json:"from"`
	Fire     int    `json:"fire"`
	Escalate int    `json:"escalate"`
	Resolve  int    `json:"resolve"`
}

type tryMessage struct {
	At      time.Time `json:"at"`
	Time    string    `json:"-"`
	Rule    string    `json:"rule"`
	Site    string    `json:"site"`
	Path    string    `json:"path"`
	Event   string    `json:"event"`
	Count   uint64    `json:"count"`
	Subject string    `json:"subject"`
	// SiteWide: a site's "no data" or its resolve, of no page, its
	// Count (0) no count of views.
	SiteWide bool `json:"site_wide,omitempty"`
}

type tryChart struct {
	Rule, Site, Path string
	Messages         int
	SVG              template.HTML
}

// tryPage draws the form: the example rule, or ?rule= an existing one.
func (s *tryPages) tryPage(w http.ResponseWriter, r *http.Request) {
	v := s.newView(tryExample, tryDays[0])
	if name := r.URL.Query().Get("rule"); name != "" {
		for _, rl := range s.deps.Rules() {
			if rl.Name == name {
				if text, err := ruleYAML(rl); err == nil {
					v.YAML = text
				}
			}
		}
	}
	s.render(w, r, "try", "Try a rule", v)
}

func (s *tryPages) newView(text string, days int) tryView {
	return tryView{YAML: text, Days: days, Periods: tryDays, MaxPages: tryMaxPages, Timeout: tryTimeout.String(),
		Available: s.deps.Minutes != nil}
}

// tryRun validates the posted rule and backtests it.
func (s *tryPages) tryRun(w http.ResponseWriter, r *http.Request) {
	p, _ := principalOf(r.Context())
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	// It changes nothing, so viewers may try rules too; but a form
	// posted from elsewhere would spend this console's reads.
	if !p.Token {
		if err := s.auth.checkCSRF(r, p.session); err != nil {
			s.fail(w, r, http.StatusForbidden, "the form has expired or came from elsewhere ("+err.Error()+"): reload the page and try again")
			return
		}
	}
	days, _ := strconv.Atoi(r.FormValue("days"))
	if !slices.Contains(tryDays, days) {
		s.fail(w, r, http.StatusBadRequest, "days: 7 or 30")
		return
	}
	v := s.newView(r.FormValue("rule"), days)
	rs, errs := parseTryRules(v.YAML)
	if len(errs) > 0 {
		v.Errors = errs
		if isAPI(r) {
			writeJSON(w, http.StatusUnprocessableEntity, v)
			return
		}
		s.renderStatus(w, r, http.StatusUnprocessableEntity, "try", "Try a rule", v)
		return
	}
	if !v.Available {
		s.fail(w, r, http.StatusServiceUnavailable, "this console reads no per-minute counts to try rules on")
		return
	}
	select {
	case s.busy <- struct{}{}:
		defer func() { <-s.busy }()
	default:
		w.Header().Set("Retry-After", "5")
		s.fail(w, r, http.StatusTooManyRequests, "another rule is being tried on this console; try again in a few seconds")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), tryTimeout)
	defer cancel()
	if err := s.backtest(ctx, rs, &v); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			s.fail(w, r, http.StatusServiceUnavailable, "the try took longer than "+tryTimeout.String()+
				" and was stopped: narrow the rule's pages (site, match) or try 7 days")
			return
		}
		s.failErr(w, r, "trying the rule", err)
		return
	}
	p.Name = shorten(p.Name, 64)
	s.deps.Logger.Info("rule tried", "user", p.Name, "rules", len(rs), "days", days, "messages", v.Total)
	s.render(w, r, "try", "Try a rule", v)
}

// backtest runs the rules over the last v.Days days of at most
// tryMaxPages pages and fills in the result.
func (s *tryPages) backtest(ctx context.Context, rs []rules.Rule, v *tryView) error {
	now := s.deps.Now().UTC()
	to := now.Truncate(time.Hour).Add(time.Hour)
	since := to.Add(-time.Duration(v.Days) * 24 * time.Hour)
	chosen, err := s.mostViewed(ctx, rs, since, now)
	if err != nil {
		return err
	}
	src := newBoundedSource(s.deps.Minutes, rs, chosen, tryMaxPages, since, to)
	// The replay logs why it leaves out a rule counting visitors; the
	// page says so itself.
	xs, err := sweep.BacktestPages(ctx, src, src.keep, rs, since, now, s.deps.Logger)
	if err != nil {
		return err
	}
	v.Ran, v.From, v.To = true, s.timeIn(since), s.timeIn(now)
	v.Pages, v.PagesOut, v.Total = src.admitted, src.left(), len(xs)
	if learnt := backtest.Learnt(rs); learnt > 0 {
		v.Learnt = backtest.LearntText(learnt)
	}
	if v.PagesOut > 0 {
		v.Notes = append(v.Notes, "Only "+strconv.Itoa(tryMaxPages)+" of the "+strconv.Itoa(src.admitted+src.left())+
			" pages the rule matches were tried: the most viewed (on sealed days), then the first seen. "+
			"Narrow its site or match to try the others; a sum rule's count here is of these pages only.")
	}
	for i, rl := range rs {
		if rl.Count == rules.CountVisitors {
			v.Notes = append(v.Notes, "Rule "+rl.Name+" counts visitors, which a backtest cannot replay from per-minute views: it was left out, as sweeper backtest leaves it out.")
		}
		for _, a := range rules.Advice(&rs[i]) { // as sweeper check warns
			v.Notes = append(v.Notes, strings.ToUpper(a[:1])+a[1:]+".")
		}
	}
	if len(xs) > tryMaxMessages {
		v.Notes = append(v.Notes, "The first "+strconv.Itoa(tryMaxMessages)+" of "+strconv.Itoa(len(xs))+" would-be messages are listed; the weeks count them all.")
	}
	s.summarise(v, xs, since, to)
	s.draw(v, xs, rs, src, since, to)
	return nil
}

// mostViewed is the pages the rules match, most viewed in [from, to)
// first, as the sealed days count them: the pages a bounded try keeps.
func (s *tryPages) mostViewed(ctx context.Context, rs []rules.Rule, from, to time.Time) ([]pageKey, error) {
	var sites []string
	for _, rl := range rs {
		if rl.Site == "" {
			sites = []string{""}
			break
		}
		if !slices.Contains(sites, rl.Site) {
			sites = append(sites, rl.Site)
		}
	}
	var all []PageViews
	for _, site := range sites {
		top, err := s.deps.Store.TopPages(ctx, site, from, to, 10_000)
		if err != nil {
			return nil, err
		}
		for _, pv := range top {
			for i := range rs {
				if rs[i].Matches(pv.Site, pv.Path) {
					all = append(all, pv)
					break
				}
			}
		}
	}
	slices.SortStableFunc(all, func(a, b PageViews) int { return cmpDesc(a.Views, b.Views) })
	out := make([]pageKey, 0, min(len(all), tryMaxPages))
	for _, pv := range all[:min(len(all), tryMaxPages)] {
		out = append(out, pageKey{pv.Site, pv.Path})
	}
	return out, nil
}

func cmpDesc(a, b uint64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// eventOf names a crossing's message: threshold crossings have always
// left their event empty, and are fires.
func eventOf(x crossing.Crossing) string {
	if x.Event == "" {
		return string(rules.EventFire)
	}
	return x.Event
}

// summarise counts the messages per week from since and lists the first.
func (s *tryPages) summarise(v *tryView, xs []crossing.Crossing, since, to time.Time) {
	week := 7 * 24 * time.Hour
	for from := since; from.Before(to); from = from.Add(week) {
		v.Weeks = append(v.Weeks, tryWeek{From: from.In(s.zone).Format("2006-01-02")})
	}
	for i, x := range xs {
		if k := int(x.CrossedAt.Sub(since) / week); k >= 0 && k < len(v.Weeks) {
			switch eventOf(x) {
			case string(rules.EventEscalate):
				v.Weeks[k].Escalate++
			case string(rules.EventResolve):
				v.Weeks[k].Resolve++
			default:
				v.Weeks[k].Fire++
			}
		}
		if i < tryMaxMessages {
			v.Messages = append(v.Messages, tryMessage{At: x.CrossedAt, Time: s.timeIn(x.CrossedAt), Rule: x.Rule, Site: x.Site,
				Path: x.Path, Event: eventOf(x), SiteWide: x.Why.SiteWide(), Count: x.Count, Subject: subjectOf(x)})
		}
	}
}

// subjectOf is the subject line the worker would give the message: the
// rule's own, or the default of its wording (as sinks/mail writes it).
// The template escapes it; strangers' text in it stays text.
func subjectOf(x crossing.Crossing) string {
	if x.Subject != "" {
		return x.Subject
	}
	n := notify.Notification{Rule: x.Rule, Site: x.Site, Path: x.Path, Count: x.Count, Threshold: x.Threshold,
		Window: x.Window, Event: x.Event, CrossedAt: x.CrossedAt, Why: x.Why}
	return "[pagewatch] " + n.Name() + " " + n.Predicate(func(s string) string { return s })
}

// draw charts the pages with the most would-be messages: views per
// hour, a marker at each message.
func (s *tryPages) draw(v *tryView, xs []crossing.Crossing, rs []rules.Rule, src *boundedSource, since, to time.Time) {
	type chartKey struct{ rule, site, path string }
	byKey := map[chartKey][]crossing.Crossing{}
	var keys []chartKey
	for _, x := range xs {
		if x.Why.SiteWide() {
			continue // no page whose views to chart
		}
		k := chartKey{x.Rule, x.Site, x.Path}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], x)
	}
	slices.SortStableFunc(keys, func(a, b chartKey) int { return len(byKey[b]) - len(byKey[a]) })
	for _, k := range keys[:min(len(keys), tryCharts)] {
		i := slices.IndexFunc(rs, func(r rules.Rule) bool { return r.Name == k.rule })
		if i < 0 {
			continue
		}
		rl := &rs[i]
		hours := src.series(rl, k.site, k.path, rl.Aggregate == rules.Sum)
		pts := make([]chart.Point, len(hours))
		for j, h := range hours {
			pts[j] = chart.Point{T: since.Add(time.Duration(j) * time.Hour), V: float64(h)}
		}
		// A label beside each mark while they are few; many would only
		// cover each other (their tooltips still say what they are).
		short := len(byKey[k]) <= 8
		var marks []chart.Mark
		for _, x := range byKey[k] {
			m := chart.Mark{T: x.CrossedAt, Event: eventOf(x),
				Label: eventOf(x) + " at " + s.timeIn(x.CrossedAt) + ": " + strconv.FormatUint(x.Count, 10) + " in " + x.Window}
			if short {
				m.Short = eventOf(x)
			}
			marks = append(marks, m)
		}
		page := k.site + k.path
		svg := chart.SVG(chart.Spec{Title: "Views per hour of " + page + " with " + k.rule + "'s would-be messages",
			Points: pts, From: since, To: to, Unit: "views per hour", Zone: s.zone, Marks: marks, Width: 960, Height: 240})
		// chart escapes every text it draws (console/chart).
		v.Charts = append(v.Charts, tryChart{Rule: k.rule, Site: k.site, Path: k.path, Messages: len(byKey[k]), SVG: template.HTML(svg)}) //nolint:gosec // escaped by chart
	}
}
