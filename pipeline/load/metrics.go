package load

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	rows, batches, insertErrors, fetchErrors, redeliveries, deadLetters prometheus.Counter
	insertSeconds                                                       prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "pagewatch_ingest_load_" + name, Help: help})
	}
	m := &metrics{
		rows:         counter("rows_total", "Hits inserted into ClickHouse (a redelivered batch counts again)."),
		batches:      counter("batches_total", "Inserts that succeeded."),
		insertErrors: counter("insert_errors_total", "Inserts that failed and were retried."),
		fetchErrors:  counter("fetch_errors_total", "Fetches from JetStream that failed and were retried."),
		redeliveries: counter("redeliveries_total", "Messages delivered more than once."),
		deadLetters:  counter("dead_letters_total", "Messages terminated as undecodable."),
		insertSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "pagewatch_ingest_load_insert_duration_seconds",
			Help:    "Time to insert one batch.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
	}
	reg.MustRegister(m.rows, m.batches, m.insertErrors, m.fetchErrors, m.redeliveries, m.deadLetters, m.insertSeconds)
	return m
}
