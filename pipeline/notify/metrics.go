package notify

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/domain/crossing"
)

type metrics struct {
	jobs          *prometheus.CounterVec
	lockConflicts prometheus.Counter
	sendSeconds   prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_worker_jobs_total",
			Help: "Notification jobs handled, by outcome: sent, duplicate, deferred, handed_off, rate_limited, failed, dead_lettered, invalid.",
		}, []string{"outcome"}),
		lockConflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_worker_lock_conflicts_total",
			Help: "Jobs deferred because another worker held the page's lock.",
		}),
		sendSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "pagewatch_worker_send_duration_seconds",
			Help:    "Time one mail send took.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
	}
	reg.MustRegister(m.jobs, m.lockConflicts, m.sendSeconds)
	for _, o := range []crossing.Outcome{crossing.Sent, crossing.Duplicate, crossing.Deferred, crossing.HandedOff, crossing.RateLimited, crossing.Failed, crossing.DeadLettered, "invalid"} {
		m.jobs.WithLabelValues(string(o))
	}
	return m
}
