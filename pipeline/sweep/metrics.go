package sweep

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/domain/clocks"
)

type metrics struct {
	sweeps, errors prometheus.Counter
	duration       prometheus.Histogram
	rows           prometheus.Counter
	crossings      *prometheus.CounterVec // by rule: rules come from the config, so bounded
	folded         *prometheus.CounterVec // by rule
	claimConflicts prometheus.Counter
	lag            prometheus.Gauge
	leader         prometheus.Gauge
	rules          prometheus.Gauge
	sitesLate      prometheus.Gauge
	sitesOnClocks  *prometheus.GaugeVec   // by zone: the candidates, so bounded
	reloads        *prometheus.CounterVec // by result: ok, rejected
	normalReads    *prometheus.CounterVec // by read (trend, noise) and result (ok, failed)
	pagesWith      *prometheus.GaugeVec   // by read (trend, noise)
	normalFailing  *prometheus.GaugeVec   // by read (trend, noise)
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		sweeps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_sweeper_sweeps_total", Help: "Sweeps run by this replica while it led.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_sweeper_sweep_errors_total", Help: "Sweeps that failed (what they missed is caught up next sweep).",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pagewatch_sweeper_sweep_duration_seconds", Help: "Time one sweep took, from sealing to releasing its claims.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		rows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_sweeper_rows_read_total", Help: "Per-page count rows read from ClickHouse.",
		}),
		crossings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_sweeper_crossings_total", Help: "Threshold crossings handed on, by rule.",
		}, []string{"rule"}),
		folded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_sweeper_storm_folded_crossings_total", Help: "Crossings the storm guard folded into a digest instead of mailing one by one, by rule.",
		}, []string{"rule"}),
		claimConflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_sweeper_claim_conflicts_total", Help: "State writes lost to another sweeper (its crossings are that sweeper's).",
		}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pagewatch_sweeper_lag_seconds", Help: "Time between the previous complete sweep and the current one: how much a sweep had to catch up.",
		}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pagewatch_sweeper_leader", Help: "1 while this replica holds the sweeper lease.",
		}),
		rules: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pagewatch_sweeper_rules", Help: "Rules in force.",
		}),
		sitesLate: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pagewatch_sweeper_sites_late", Help: "Sites whose data was late at this replica's last sweep: drops on their pages are held.",
		}),
		sitesOnClocks: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pagewatch_sweeper_sites_on_learned_clocks", Help: "Sites whose normals rules with zone: auto read on the clocks learned from their traffic, by zone (the others are on UTC's).",
		}, []string{"zone"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_sweeper_rule_reloads_total", Help: "Rule reloads, by result: ok, or rejected (the previous rules stayed).",
		}, []string{"result"}),
		normalReads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_sweeper_page_normal_reads_total", Help: "Reads of every page's slow trend and own noise for a day, by read (trend, noise) and result (ok, failed: the pages' normals do without it until it is read).",
		}, []string{"read", "result"}),
		pagesWith: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pagewatch_sweeper_pages_with_own_normal", Help: "Pages whose normal follows their own slow trend (read=trend) or reads their own noise (read=noise), as the last read found them.",
		}, []string{"read"}),
		normalFailing: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pagewatch_sweeper_page_normal_read_failing", Help: "1 while this replica's last read of the pages' trends (read=trend) or noise (read=noise) failed, until one succeeds.",
		}, []string{"read"}),
	}
	reg.MustRegister(m.sweeps, m.errors, m.duration, m.rows, m.crossings, m.folded, m.claimConflicts, m.lag, m.leader, m.rules, m.sitesLate, m.sitesOnClocks, m.reloads,
		m.normalReads, m.pagesWith, m.normalFailing)
	m.reloads.WithLabelValues("ok")
	m.reloads.WithLabelValues("rejected")
	for _, read := range []string{"trend", "noise"} {
		m.normalReads.WithLabelValues(read, "ok")
		m.normalReads.WithLabelValues(read, "failed")
		m.pagesWith.WithLabelValues(read)
		m.normalFailing.WithLabelValues(read)
	}
	m.setClocks(nil) // every zone served from the start, at 0
	return m
}

// setClocks sets how many sites are on each candidate's clocks.
func (m *metrics) setClocks(of map[string]*time.Location) {
	n := map[string]int{}
	for _, loc := range of {
		n[loc.String()]++
	}
	for _, c := range clocks.Candidates {
		m.sitesOnClocks.WithLabelValues(c.Name).Set(float64(n[c.Name]))
	}
}

// normalRead counts one read of the pages' trends or noise for a day
// (baselines.trendsFor), and how many pages it gave one.
func (m *metrics) normalRead(read string, ok bool, pages int) {
	// pages is set either way: a noise read that failed for some sites
	// gave the others theirs, and a trend read that failed gave none.
	m.pagesWith.WithLabelValues(read).Set(float64(pages))
	if !ok {
		m.normalReads.WithLabelValues(read, "failed").Inc()
		m.normalFailing.WithLabelValues(read).Set(1)
		return
	}
	m.normalReads.WithLabelValues(read, "ok").Inc()
	m.normalFailing.WithLabelValues(read).Set(0)
}

// cronLogger adapts slog to robfig/cron's logger.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug("cron: "+msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error(fmt.Sprintf("cron: %s", msg), append(kv, "err", err)...)
}
