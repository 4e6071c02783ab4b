package discover

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	found       *prometheus.CounterVec // by how: scan, event
	rescans     *prometheus.CounterVec // by reason: start, poll, overflow, root
	watchErrors *prometheus.CounterVec // by kind: init, limit, add, overflow, read
	watched     prometheus.Gauge
	files       prometheus.Gauge
	inotify     prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		found: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_ingest_discover_files_found_total",
			Help: "Access-log files found, by how: scan (at start or by a full scan) or event (inotify).",
		}, []string{"how"}),
		rescans: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_ingest_discover_rescans_total",
			Help: "Full scans of every glob, by reason: start, poll, overflow (inotify lost events), root (a glob's root directory appeared or went).",
		}, []string{"reason"}),
		watchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_ingest_discover_watch_errors_total",
			Help: "inotify problems, by kind: init (no instance), limit (max_user_watches reached; polling only from then), add (a directory could not be watched), overflow (events lost), read.",
		}, []string{"kind"}),
		watched: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pagewatch_ingest_discover_watched_directories",
			Help: "Directories watched with inotify.",
		}),
		files: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pagewatch_ingest_discover_files",
			Help: "Matching files that exist, as last seen.",
		}),
		inotify: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pagewatch_ingest_discover_inotify_active",
			Help: "1 while inotify events are used, 0 when files are found by polling alone.",
		}),
	}
	reg.MustRegister(m.found, m.rescans, m.watchErrors, m.watched, m.files, m.inotify)
	for _, h := range []string{"scan", "event"} {
		m.found.WithLabelValues(h)
	}
	for _, r := range []string{"start", "poll", "overflow", "root"} {
		m.rescans.WithLabelValues(r)
	}
	for _, k := range []string{"init", "limit", "add", "overflow", "read"} {
		m.watchErrors.WithLabelValues(k)
	}
	return m
}
