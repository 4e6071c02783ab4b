package sweep

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	sweeps, errors prometheus.Counter
	duration       prometheus.Histogram
	crossings      *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, rules []Rule) *metrics {
	m := &metrics{
		sweeps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_sweeper_sweeps_total", Help: "Sweeps run.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_sweeper_rule_errors_total", Help: "Rule evaluations that failed (retried next sweep).",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pagewatch_sweeper_sweep_duration_seconds", Help: "Time one sweep took.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		// The rule name is a bounded label: rules come from the config.
		crossings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_sweeper_crossings_total", Help: "Threshold crossings recorded, by rule.",
		}, []string{"rule"}),
	}
	reg.MustRegister(m.sweeps, m.errors, m.duration, m.crossings)
	for _, r := range rules {
		m.crossings.WithLabelValues(r.Name)
	}
	return m
}

// cronLogger adapts slog to robfig/cron's logger.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug("cron: "+msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error(fmt.Sprintf("cron: %s", msg), append(kv, "err", err)...)
}
