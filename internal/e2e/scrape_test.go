package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pagewatch/pagewatch/internal/metricsdoc"
	"github.com/pagewatch/pagewatch/internal/modroot"
)

// documentedMetrics reads deploy/metrics.md: metric names by daemon
// ("ingest tail", "ingest load", "sweeper", "worker").
func documentedMetrics(t testing.TB) map[string][]string {
	t.Helper()
	doc, err := metricsdoc.Read(filepath.Join(modroot.Must(t), "deploy", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	by := doc.ByDaemon()
	for _, d := range metricsdoc.Daemons {
		if len(by[d]) == 0 {
			t.Fatalf("deploy/metrics.md documents no metric under \"## %s\"", d)
		}
	}
	return by
}

// family is one metric family as scraped: sample values by labels ("" for
// none; a histogram's value is its count).
type family struct {
	series map[string]float64
}

// scrape reads a daemon's /metrics.
func scrape(addr string) (map[string]family, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse %s/metrics: %w", addr, err)
	}
	out := map[string]family{}
	for name, mf := range mfs {
		f := family{series: map[string]float64{}}
		for _, m := range mf.GetMetric() {
			f.series[labelString(m)] = sampleValue(mf.GetType(), m)
		}
		out[name] = f
	}
	return out, nil
}

func labelString(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func sampleValue(typ dto.MetricType, m *dto.Metric) float64 {
	switch typ {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_HISTOGRAM:
		return float64(m.GetHistogram().GetSampleCount())
	case dto.MetricType_SUMMARY:
		return float64(m.GetSummary().GetSampleCount())
	}
	return m.GetUntyped().GetValue()
}

// watcher scrapes daemons every interval and remembers, per daemon and
// metric family, whether it was served and whether it moved: a series
// seen non-zero (every process starts its counters at zero) or changing.
type watcher struct {
	mu      sync.Mutex
	targets map[string][]string // daemon -> admin addresses
	last    map[string]map[string]float64
	served  map[string]map[string]bool // daemon -> family
	moved   map[string]map[string]bool
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

func watchMetrics(interval time.Duration) *watcher {
	w := &watcher{targets: map[string][]string{}, last: map[string]map[string]float64{},
		served: map[string]map[string]bool{}, moved: map[string]map[string]bool{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			w.scrapeAll()
			select {
			case <-w.stop:
				w.scrapeAll()
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// add starts watching a daemon process's admin address.
func (w *watcher) add(daemon, addr string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.targets[daemon] = append(w.targets[daemon], addr)
}

func (w *watcher) scrapeAll() {
	w.mu.Lock()
	targets := map[string][]string{}
	for d, a := range w.targets {
		targets[d] = append([]string(nil), a...)
	}
	w.mu.Unlock()
	for daemon, addrs := range targets {
		for _, addr := range addrs {
			fams, err := scrape(addr)
			if err != nil {
				continue // stopped, or an outage in the test; not a finding
			}
			w.record(daemon, addr, fams)
		}
	}
}

func (w *watcher) record(daemon, addr string, fams map[string]family) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.served[daemon] == nil {
		w.served[daemon], w.moved[daemon] = map[string]bool{}, map[string]bool{}
	}
	for fam, f := range fams {
		w.served[daemon][fam] = true
		key := addr + "|" + fam
		if w.last[key] == nil {
			w.last[key] = map[string]float64{}
		}
		for labels, v := range f.series {
			prev, seen := w.last[key][labels]
			if v != 0 || (seen && prev != v) {
				w.moved[daemon][fam] = true
			}
			w.last[key][labels] = v
		}
	}
}

// finish scrapes once more and stops; it may be called again.
func (w *watcher) finish() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}
