package console

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	request     *prometheus.HistogramVec
	logins      *prometheus.CounterVec
	forbidden   prometheus.Counter
	actions     *prometheus.CounterVec
	subscribers prometheus.Gauge
	livePoll    prometheus.Histogram
	livePollErr prometheus.Counter
}

// routeNames are the request label's values, registered at 0 from the
// start.
var routeNames = []string{"login", "logout", "live", "live_stream", "history", "page", "dead", "dead_retry", "dead_discard", "rules", "pipeline", "silences", "silence_change", "whoami"}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		request: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pagewatch_console_request_seconds",
			Help:    "Server time of console pages and API calls, by route (live_stream: the whole stream's life).",
			Buckets: []float64{.005, .01, .025, .05, .1, .2, .5, 1, 2.5, 5},
		}, []string{"route"}),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_console_logins_total",
			Help: "Console logins, by result: ok, failed, limited (refused for too many failures), csrf (the form's token was missing or wrong).",
		}, []string{"result"}),
		forbidden: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_console_forbidden_total",
			Help: "Changes (retry, discard, silence) refused because the caller is a viewer.",
		}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_console_dead_letter_actions_total",
			Help: "Dead letters operators acted on, by action: retry, discard.",
		}, []string{"action"}),
		subscribers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pagewatch_console_live_subscribers",
			Help: "Browsers following the live view now.",
		}),
		livePoll: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "pagewatch_console_live_poll_seconds",
			Help:    "Time of the live view's one shared ClickHouse read, made every console.live_interval while a browser follows it.",
			Buckets: []float64{.01, .025, .05, .1, .2, .5, 1, 2.5, 5},
		}),
		livePollErr: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_console_live_poll_errors_total",
			Help: "Live view reads that failed; browsers keep the last numbers.",
		}),
	}
	reg.MustRegister(m.request, m.logins, m.forbidden, m.actions, m.subscribers, m.livePoll, m.livePollErr)
	for _, r := range routeNames {
		m.request.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "failed", "limited", "csrf"} {
		m.logins.WithLabelValues(r)
	}
	for _, a := range []string{actRetry, actDiscard} {
		m.actions.WithLabelValues(a)
	}
	return m
}
