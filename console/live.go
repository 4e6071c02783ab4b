package console

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/pagewatch/pagewatch/console/chart"
	"github.com/pagewatch/pagewatch/domain/clocks"
	"github.com/pagewatch/pagewatch/domain/rules"
)

const (
	livePerSite = 50
	// baselineDays is the trailing span of a page's normal: the median
	// of its daily views over the last week's whole days, zeros included
	// (robust to a spike day, like the spike rules' trailing baseline),
	// as an hour: a 24th of it. Days, not hours: page_days is keyed by
	// page, so the normal of 200 pages is 1,400 rows read by key.
	baselineDays = 7
	// baselineTTL is how long baselines are reused: they move by the hour.
	baselineTTL = 5 * time.Minute
	maxLiveSubs = 1000
	// maxRuleNormals bounds the pages whose normal one refresh reads from
	// their hours (a read of each page's weeks, by key), the busiest
	// first; the rest keep the day median. ruleNormalReads is how many
	// run at once.
	maxRuleNormals  = 60
	ruleNormalReads = 8
)

// liveSnapshot is the live view at one moment, every site's pages.
type liveSnapshot struct {
	At      time.Time  `json:"at"`
	AtShown string     `json:"at_shown"`
	Pages   []livePage `json:"pages"`
}

type livePage struct {
	Site          string  `json:"site"`
	Path          string  `json:"path"`
	Views5m       uint64  `json:"views_5m"`
	Views1h       uint64  `json:"views_1h"`
	Visitors5m    uint64  `json:"visitors_5m"` // distinct client keys among the views
	Visitors1h    uint64  `json:"visitors_1h"`
	Baseline      float64 `json:"baseline"` // normal views per hour
	BaselineShown string  `json:"baseline_shown"`
	// NormalFrom says where the normal came from, for its tooltip: the
	// rule whose detector made it ("unusual: usual 80–140 an hour") or
	// the day median.
	NormalFrom string  `json:"normal_from"`
	Ratio      float64 `json:"ratio"` // views_1h against the baseline
	// RatioShown is "6.1× normal", or "new" for a page without history.
	RatioShown string `json:"ratio_shown"`
	Spark      string `json:"spark"` // the sparkline's SVG points
	// Held says which rule's surge the client guard holds, and why
	// ("spike: mostly one client: 97% of 1,204 views"); "" none.
	Held string `json:"held,omitempty"`
}

// hub makes one ClickHouse read per interval for however many browsers
// follow the live view, and hands each the result.
type hub struct {
	store    TrafficStore
	interval time.Duration
	now      func() time.Time
	logger   *slog.Logger
	metrics  *metrics
	zone     *time.Location
	held     *heldCache      // nil: held surges are not shown
	clocks   *clocks.Learner // nil: every normal on its rule's zone

	mu   sync.Mutex
	subs map[chan struct{}]struct{}
	wake chan struct{}

	pollMu    sync.Mutex
	last      *liveSnapshot
	polledAt  time.Time // by the machine's clock, not now: how fresh last is
	baselines map[[2]string]liveNormal
	baseAt    time.Time
	rules     func() []rules.Rule // nil: the day median only
	states    RuleStates          // nil: no page's new level is read
}

func newHub(store TrafficStore, interval time.Duration, now func() time.Time, logger *slog.Logger, m *metrics) *hub {
	return &hub{store: store, interval: interval, now: now, logger: logger, metrics: m,
		zone: time.UTC, subs: map[chan struct{}]struct{}{}, wake: make(chan struct{}, 1)}
}

// Run polls while anyone follows the live view.
func (h *hub) Run(ctx context.Context) error {
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		if h.count() == 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-h.wake:
			}
		}
		if _, err := h.poll(ctx); err != nil && ctx.Err() == nil {
			h.metrics.livePollErr.Inc()
			h.logger.Warn("live view read failed; browsers keep the last numbers", "err", err)
		} else {
			h.broadcast()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (h *hub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

func (h *hub) subscribe() (chan struct{}, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) >= maxLiveSubs {
		return nil, false
	}
	c := make(chan struct{}, 1)
	h.subs[c] = struct{}{}
	h.metrics.subscribers.Set(float64(len(h.subs)))
	select {
	case h.wake <- struct{}{}:
	default:
	}
	return c, true
}

func (h *hub) unsubscribe(c chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, c)
	h.metrics.subscribers.Set(float64(len(h.subs)))
}

func (h *hub) broadcast() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.subs {
		select {
		case c <- struct{}{}:
		default: // it has one waiting already
		}
	}
}

// current is the latest snapshot, read anew if older than the interval.
func (h *hub) current(ctx context.Context) (*liveSnapshot, error) {
	h.pollMu.Lock()
	last := h.last
	h.pollMu.Unlock()
	h.pollMu.Lock()
	fresh := last != nil && time.Since(h.polledAt) < h.interval
	h.pollMu.Unlock()
	if fresh {
		return last, nil
	}
	return h.poll(ctx)
}

func (h *hub) latest() *liveSnapshot {
	h.pollMu.Lock()
	defer h.pollMu.Unlock()
	return h.last
}

// poll reads every site's rising pages, once, whoever asked.
func (h *hub) poll(ctx context.Context) (*liveSnapshot, error) {
	h.pollMu.Lock()
	defer h.pollMu.Unlock()
	now := h.now()
	if h.last != nil && time.Since(h.polledAt) < h.interval/2 {
		return h.last, nil // another caller just read it
	}
	start := time.Now()
	pages, err := h.store.Live(ctx, LiveQuery{Now: now, PerSite: livePerSite})
	if err != nil {
		return nil, fmt.Errorf("live pages: %w", err)
	}
	if err := h.refreshBaselines(ctx, now, pages); err != nil {
		return nil, err
	}
	var held map[[2]string]string
	if h.held != nil {
		if held, err = h.held.reasons(ctx, now, pages); err != nil {
			h.logger.Warn("live view: reading held surges failed; shown without them", "err", err)
		}
	}
	h.metrics.livePoll.Observe(time.Since(start).Seconds())
	snap := &liveSnapshot{At: now, AtShown: now.In(h.zone).Format("15:04:05"), Pages: make([]livePage, 0, len(pages))}
	for _, p := range pages {
		n := h.baselines[[2]string{p.Site, p.Path}]
		ratio := n.ratio(p.Views1h)
		snap.Pages = append(snap.Pages, livePage{Site: p.Site, Path: p.Path, Views5m: p.Views5m, Views1h: p.Views1h,
			Visitors5m: p.Visitors5m, Visitors1h: p.Visitors1h,
			Baseline: n.perHour, BaselineShown: n.shown(), NormalFrom: n.from, Ratio: ratio,
			RatioShown: n.against(ratio), Spark: chart.Spark(p.Minutes, 120, 24), Held: held[[2]string{p.Site, p.Path}]})
	}
	slices.SortStableFunc(snap.Pages, func(a, b livePage) int {
		if c := cmp.Compare(b.Ratio, a.Ratio); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Views1h, a.Views1h); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Site, b.Site), cmp.Compare(a.Path, b.Path))
	})
	h.last, h.polledAt = snap, time.Now()
	return snap, nil
}

// refreshBaselines reads the normal of pages it has none for, and of
// all of them every baselineTTL: the rule's normal where a rule with one
// watches the page (normals.go), else the day median.
func (h *hub) refreshBaselines(ctx context.Context, now time.Time, pages []LivePage) error {
	if h.baselines == nil || now.Sub(h.baseAt) > baselineTTL {
		h.baselines, h.baseAt = map[[2]string]liveNormal{}, now
	}
	var missing []LivePage
	for _, p := range pages {
		if _, ok := h.baselines[[2]string{p.Site, p.Path}]; !ok {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	byRule, err := h.ruleNormals(ctx, now, missing)
	if err != nil {
		return fmt.Errorf("live normals: %w", err)
	}
	var sites, paths []string
	seenS, seenP := map[string]bool{}, map[string]bool{}
	for _, p := range missing {
		if _, ok := byRule[[2]string{p.Site, p.Path}]; ok {
			continue
		}
		if !seenS[p.Site] {
			seenS[p.Site], sites = true, append(sites, p.Site)
		}
		if !seenP[p.Path] {
			seenP[p.Path], paths = true, append(paths, p.Path)
		}
	}
	days := map[[2]string][]float64{}
	if len(paths) > 0 {
		from, to := baselineSpan(now)
		rows, err := h.store.DayTotals(ctx, sites, paths, from, to)
		if err != nil {
			return fmt.Errorf("live baselines: %w", err)
		}
		for _, r := range rows {
			k := [2]string{r.Site, r.Path}
			days[k] = append(days[k], float64(r.Hits))
		}
	}
	for _, p := range missing {
		k := [2]string{p.Site, p.Path}
		if n, ok := byRule[k]; ok {
			h.baselines[k] = n
			continue
		}
		h.baselines[k] = liveNormal{perHour: normalPerHour(days[k]), history: len(days[k]) > 0,
			from: "a 24th of the median day of the last 7"}
	}
	return nil
}

// baselineSpan is the whole UTC days a page's normal is made from: the
// baselineDays before today.
func baselineSpan(now time.Time) (from, to time.Time) {
	to = now.UTC().Truncate(24 * time.Hour)
	return to.Add(-baselineDays * 24 * time.Hour), to
}

// normalPerHour is a page's normal hour from its day totals over the
// baseline span: a 24th of its median day, days without a row being 0.
func normalPerHour(days []float64) float64 { return medianWithZeros(days, baselineDays) / 24 }

// medianWithZeros is the median of n values of which those not given
// are 0: days without views have no row.
func medianWithZeros(vals []float64, n int) float64 {
	if len(vals) > n {
		vals = vals[len(vals)-n:]
	}
	all := make([]float64, n)
	copy(all[n-len(vals):], vals)
	slices.Sort(all)
	if n%2 == 1 {
		return all[n/2]
	}
	return (all[n/2-1] + all[n/2]) / 2
}

// forSite keeps one site's pages ("" all), at most limit.
func (s *liveSnapshot) forSite(site string, limit int) *liveSnapshot {
	out := &liveSnapshot{At: s.At, AtShown: s.AtShown, Pages: []livePage{}}
	for _, p := range s.Pages {
		if (site == "" || p.Site == site) && len(out.Pages) < limit {
			out.Pages = append(out.Pages, p)
		}
	}
	return out
}

type liveView struct {
	Site   string        `json:"site"`
	Stream string        `json:"-"`
	Live   *liveSnapshot `json:"live"`
}

// livePages are the pages moving now, drawn from the hub and streamed.
type livePages struct {
	*frame
	live *hub
}

// streamKeepAlive is how often a stream sends a keep-alive and asks
// whether its credentials still hold (a variable for tests).
var streamKeepAlive = 15 * time.Second

func (s *livePages) livePage(w http.ResponseWriter, r *http.Request) {
	site := r.URL.Query().Get("site")
	snap, err := s.live.current(r.Context())
	if err != nil {
		s.failErr(w, r, "reading the live view", err)
		return
	}
	stream := "/api/v1/live/stream"
	if site != "" {
		stream += "?" + url.Values{"site": {site}}.Encode()
	}
	s.render(w, r, "live", "Live", liveView{Site: site, Stream: stream, Live: snap.forSite(site, livePerSite*4)})
}

// streamWriteTimeout bounds each of the live stream's writes.
const streamWriteTimeout = 30 * time.Second

// liveStream sends the live view as server-sent events, one "live"
// event per poll, until the browser goes or the console stops.
func (s *livePages) liveStream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		s.fail(w, r, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	c, ok := s.live.subscribe()
	if !ok {
		s.fail(w, r, http.StatusServiceUnavailable, "too many live views open")
		return
	}
	defer s.live.unsubscribe(c)
	site := r.URL.Query().Get("site")
	// The server's write timeout bounds a whole answer, and a stream lasts
	// as long as its browser stays: each write is bounded instead, so a
	// browser that stops reading still frees the stream.
	rc := http.NewResponseController(w)
	write := func(format string, args ...any) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	w.WriteHeader(http.StatusOK)
	if !write("retry: 3000\n\n") {
		return
	}
	send := func(snap *liveSnapshot) bool {
		b, err := json.Marshal(snap.forSite(site, livePerSite*4))
		if err != nil {
			return false
		}
		return write("event: live\ndata: %s\n\n", b)
	}
	if snap := s.live.latest(); snap != nil && !send(snap) {
		return
	}
	keepAlive := time.NewTicker(streamKeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepAlive.C:
			// A stream lasts as long as its browser stays: a session
			// logged out (here or on another console) or expired since
			// it began ends it within one keep-alive.
			if !s.stillWho(r) {
				write("event: ended\ndata: {}\n\n")
				return
			}
			if !write(": keep-alive\n\n") {
				return
			}
		case <-c:
			if snap := s.live.latest(); snap != nil && !send(snap) {
				return
			}
		}
	}
}
