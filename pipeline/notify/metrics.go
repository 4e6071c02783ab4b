package notify

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/domain/crossing"
)

var deliveryOutcomes = []crossing.Outcome{crossing.Sent, crossing.Duplicate, crossing.RateLimited, crossing.Failed, crossing.DeadLettered, crossing.Held, crossing.Quiet}

type metrics struct {
	jobs          *prometheus.CounterVec
	deliveries    *prometheus.CounterVec
	lockConflicts prometheus.Counter
	sendSeconds   prometheus.Histogram
	// takeovers counts claims taken over, by whose: "own" (this worker's,
	// known to have sent nothing) or "expired" (another's, past
	// claim_timeout: whether that worker sent is unknown, so the crossing
	// may reach its receiver twice).
	takeovers *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, receivers []string) *metrics {
	m := &metrics{
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_worker_jobs_total",
			Help: "Notification outcomes, by outcome: of a job (deferred, handed_off, silenced, invalid) or of one of its deliveries (sent, duplicate, rate_limited, failed, dead_lettered, held, quiet, unsubscribed).",
		}, []string{"outcome"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_worker_deliveries_total",
			Help: "Deliveries of crossings to receivers, by receiver (its name in the config) and outcome: sent, duplicate, rate_limited, failed, dead_lettered, held, quiet.",
		}, []string{"receiver", "outcome"}),
		lockConflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_worker_lock_conflicts_total",
			Help: "Jobs deferred because another worker held the page's lock.",
		}),
		takeovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_worker_claims_taken_over_total",
			Help: "Delivery claims taken over, by whose: own (this worker's, whose write it could not confirm or release; nothing was sent under it) or expired (another worker's, older than worker.claim_timeout: that worker died or was cut off from NATS, and may have sent, so the crossing may reach its receiver twice).",
		}, []string{"whose"}),
		sendSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "pagewatch_worker_send_duration_seconds",
			Help:    "Time one mail send took.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
	}
	reg.MustRegister(m.jobs, m.deliveries, m.lockConflicts, m.sendSeconds, m.takeovers)
	m.takeovers.WithLabelValues("own")
	m.takeovers.WithLabelValues("expired")
	for _, o := range []crossing.Outcome{crossing.Sent, crossing.Duplicate, crossing.Deferred, crossing.HandedOff, crossing.RateLimited, crossing.Failed, crossing.DeadLettered, crossing.Silenced, crossing.Held, crossing.Quiet, crossing.Unsubscribed, "invalid"} {
		m.jobs.WithLabelValues(string(o))
	}
	for _, r := range receivers {
		for _, o := range deliveryOutcomes {
			m.deliveries.WithLabelValues(r, string(o))
		}
	}
	return m
}
