package ratelimit

import "github.com/prometheus/client_golang/prometheus"

// The "limit" label is Key.Name: a handful of fixed names, never an
// address.
type metrics struct {
	waits        *prometheus.HistogramVec
	reservations *prometheus.CounterVec
	conflicts    *prometheus.CounterVec
	errors       *prometheus.CounterVec
	skew         prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		waits: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pagewatch_ratelimit_wait_seconds",
			Help: "Wait before the claimed slot, by limit; 0 for a send allowed at once.",
			// 1 ms to about 4.6 h: per-recipient waits are minutes to hours.
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 13),
		}, []string{"limit"}),
		reservations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_ratelimit_reservations_total",
			Help: "Slot requests by limit and result: claimed, or declined by TryReserve as too far off.",
		}, []string{"limit", "result"}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_ratelimit_cas_conflicts_total",
			Help: "Slot claims refused because another worker moved the limit first (retried), by limit.",
		}, []string{"limit"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_ratelimit_errors_total",
			Help: "Slot requests that failed talking to NATS (nothing was granted), by limit.",
		}, []string{"limit"}),
		skew: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pagewatch_ratelimit_clock_skew_seconds",
			Help: "Difference between a state writer's clock and the NATS server's, seen on each read (includes the write's latency).",
			// 1 ms to about 16 s.
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
	}
	reg.MustRegister(m.waits, m.reservations, m.conflicts, m.errors, m.skew)
	// Present from the start, so dashboards and alerts see zeros.
	for _, name := range []string{Global().Name, Recipient("").Name} {
		m.waits.WithLabelValues(name)
		m.reservations.WithLabelValues(name, "claimed")
		m.reservations.WithLabelValues(name, "declined")
		m.conflicts.WithLabelValues(name)
		m.errors.WithLabelValues(name)
	}
	return m
}
