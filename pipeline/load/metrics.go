package load

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	rows, batches, insertErrors, fetchErrors, redeliveries, deadLetters prometheus.Counter
	insertSeconds, batchRows                                            prometheus.Histogram
	insertBackoff, pending, ackPending                                  prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "pagewatch_ingest_load_" + name, Help: help})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: "pagewatch_ingest_load_" + name, Help: help})
	}
	m := &metrics{
		rows:         counter("rows_total", "Hits inserted into ClickHouse (a redelivered batch counts again)."),
		batches:      counter("batches_total", "Inserts that succeeded."),
		insertErrors: counter("insert_errors_total", "Inserts that failed and were retried."),
		fetchErrors:  counter("fetch_errors_total", "Fetches from JetStream that failed and were retried."),
		redeliveries: counter("redeliveries_total", "Messages delivered more than once."),
		deadLetters:  counter("dead_letters_total", "Undecodable messages moved to the dead-letter stream."),
		insertSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "pagewatch_ingest_load_insert_duration_seconds",
			Help:    "Time to insert one batch.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		batchRows: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "pagewatch_ingest_load_batch_rows",
			Help:    "Hits per insert.",
			Buckets: prometheus.ExponentialBuckets(100, 4, 8),
		}),
		insertBackoff: gauge("insert_backoff_seconds", "Current wait before retrying a failed insert; 0 when inserts succeed."),
		pending:       gauge("consumer_pending_messages", "Messages in JetStream not yet delivered to any loader: the lag."),
		ackPending:    gauge("consumer_ack_pending_messages", "Messages delivered to loaders and not yet acknowledged."),
	}
	reg.MustRegister(m.rows, m.batches, m.insertErrors, m.fetchErrors, m.redeliveries, m.deadLetters,
		m.insertSeconds, m.batchRows, m.insertBackoff, m.pending, m.ackPending)
	return m
}

// watchLag exports the consumer's backlog every few seconds.
func (l *Loader) watchLag(ctx context.Context) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		l.sampleLag(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sampleLag exports the consumer's backlog now.
func (l *Loader) sampleLag(ctx context.Context) {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if info, err := l.consumer().Info(ictx); err == nil {
		l.metrics.pending.Set(float64(info.NumPending))
		l.metrics.ackPending.Set(float64(info.NumAckPending))
	}
}
