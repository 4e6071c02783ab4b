package visitor

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	created     prometheus.Counter
	fetchErrors prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		created: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_visitor_salts_created_total",
			Help: "Daily visitor salts this process made and stored first (another tailer's salt for the day is read, not counted).",
		}),
		fetchErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_visitor_salt_fetch_errors_total",
			Help: "Salt lookups that failed talking to NATS, after retrying until the caller's deadline; the caller had no client key for that line.",
		}),
	}
	reg.MustRegister(m.created, m.fetchErrors)
	return m
}
