package tail

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/pipeline/logformat"
)

type metrics struct {
	lines     *prometheus.CounterVec // by result: hit, malformed, skipped
	malformed *prometheus.CounterVec // by reason
	bytes     prometheus.Counter
	batches   prometheus.Counter
	retries   prometheus.Counter
	rotations *prometheus.CounterVec // by kind: rename, truncate
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		lines: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_ingest_tail_lines_total",
			Help: "Access-log lines read, by result: hit (published), malformed (unparseable), skipped (not a page view).",
		}, []string{"result"}),
		malformed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_ingest_tail_malformed_lines_total",
			Help: "Unparseable access-log lines, by reason.",
		}, []string{"reason"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_ingest_tail_read_bytes_total",
			Help: "Bytes read from access logs.",
		}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_ingest_tail_batches_published_total",
			Help: "Batches of hits published to JetStream.",
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_ingest_tail_publish_retries_total",
			Help: "Publish attempts that failed and were retried.",
		}),
		rotations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_ingest_tail_rotations_total",
			Help: "Log rotations seen, by kind: rename (new file at the path) or truncate.",
		}, []string{"kind"}),
	}
	reg.MustRegister(m.lines, m.malformed, m.bytes, m.batches, m.retries, m.rotations)
	for _, r := range []string{"hit", "malformed", "skipped"} {
		m.lines.WithLabelValues(r)
	}
	for _, r := range logformat.Reasons() {
		m.malformed.WithLabelValues(r)
	}
	return m
}
