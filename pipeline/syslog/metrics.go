package syslog

import "github.com/prometheus/client_golang/prometheus"

// Every message received ends in exactly one of delivered, malformed,
// filtered or dropped, so the counters add up.
type metrics struct {
	received, delivered, bytes *prometheus.CounterVec // by transport
	malformed                  *prometheus.CounterVec // by reason
	filtered, dropped          prometheus.Counter
	conns                      prometheus.Gauge
	rejected                   prometheus.Counter

	// Resolved once: the per-message path does no label lookups.
	udp, tcp transportMetrics
	byReason map[string]prometheus.Counter
}

type transportMetrics struct {
	name                       string
	received, delivered, bytes prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_ingest_syslog_messages_received_total",
			Help: "Syslog messages (datagrams or TCP frames) received, by transport.",
		}, []string{"transport"}),
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_ingest_syslog_messages_delivered_total",
			Help: "Syslog messages parsed and handed on, by transport.",
		}, []string{"transport"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_ingest_syslog_received_bytes_total",
			Help: "Bytes received, framing included, by transport.",
		}, []string{"transport"}),
		malformed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_ingest_syslog_malformed_messages_total",
			Help: "Syslog messages skipped as malformed, by reason.",
		}, []string{"reason"}),
		filtered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_ingest_syslog_filtered_messages_total",
			Help: "Syslog messages skipped because their app-name is not in ingest.tail.syslog.tags.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_ingest_syslog_dropped_messages_total",
			Help: "UDP datagrams dropped because the queue to the handler was full (the kernel's own drops are not seen here).",
		}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pagewatch_ingest_syslog_tcp_connections",
			Help: "Open syslog TCP connections.",
		}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_ingest_syslog_tcp_connections_rejected_total",
			Help: "Syslog TCP connections closed on accept because max_tcp_connections were open.",
		}),
	}
	reg.MustRegister(m.received, m.delivered, m.bytes, m.malformed, m.filtered, m.dropped, m.conns, m.rejected)
	tm := func(name string) transportMetrics {
		return transportMetrics{name: name, received: m.received.WithLabelValues(name),
			delivered: m.delivered.WithLabelValues(name), bytes: m.bytes.WithLabelValues(name)}
	}
	m.udp, m.tcp = tm("udp"), tm("tcp")
	m.byReason = map[string]prometheus.Counter{}
	for _, r := range Reasons() {
		m.byReason[r] = m.malformed.WithLabelValues(r)
	}
	return m
}

func (m *metrics) malformedFor(reason string) prometheus.Counter {
	if c, ok := m.byReason[reason]; ok {
		return c
	}
	return m.malformed.WithLabelValues(reason)
}
