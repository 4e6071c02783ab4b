package tail

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
	"github.com/pagewatch/pagewatch/pipeline/pageview"
)

// filterNoSite counts lines of an input without a site whose virtual
// host is missing or unusable.
const filterNoSite = "no_site"

type metrics struct {
	lines      *prometheus.CounterVec // by result: hit, malformed, skipped
	malformed  *prometheus.CounterVec // by reason
	filtered   *prometheus.CounterVec // by filter: why a parsed line is no page view
	classes    *prometheus.CounterVec // hits by client class
	keyless    prometheus.Counter     // hits without a client key though visitors are on
	datedAhead prometheus.Counter     // lines dated ahead of the clock (counted all the same)
	bytes      prometheus.Counter
	batches    prometheus.Counter
	retries    prometheus.Counter
	rotations  *prometheus.CounterVec // by kind: rename, truncate, delete

	// The series every line adds to, looked up once: a label lookup per
	// line costs more than the counting.
	hits, malformedLines, skippedLines prometheus.Counter
	byReason, byFilter                 map[string]prometheus.Counter
	byClass                            []prometheus.Counter // by hit.Class

	// With --from-start, by input (its configured path).
	backfillBytes *prometheus.CounterVec
	backfillLines *prometheus.CounterVec
	backfillTotal *prometheus.GaugeVec
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
		filtered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_ingest_tail_filtered_lines_total",
			Help: "Parsed lines that are no page view (counted as skipped), by the filter that dropped them: " +
				"no_request, method, status, not_a_path, static (ingest.tail.pages), or no_site (no virtual host).",
		}, []string{"filter"}),
		classes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_ingest_tail_hits_by_class_total",
			Help: "Hits published, by client class as the user agent tells: human, bot, ai_agent, ai_crawler, unknown; " +
				"counted as views or not (ingest.tail.pages.count_classes).",
		}, []string{"class"}),
		keyless: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_ingest_tail_hits_keyless_total",
			Help: "Hits published without a client key though ingest.tail.visitors is on: the day's salt could not be had from NATS in time. Visitors are undercounted by them.",
		}),
		datedAhead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_ingest_tail_lines_dated_ahead_total",
			Help: "Lines dated more than 5 minutes ahead of ingest tail's clock, read as any other line: a page view among them is counted at its own time. A server's clock running ahead, or a log format without a zone on a server east of UTC.",
		}),
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
			Help: "Log rotations seen, by kind: rename (new file at the path, or the file found renamed after a restart), truncate, or delete (file deleted, closed once read).",
		}, []string{"kind"}),
		backfillBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_ingest_tail_backfill_read_bytes_total",
			Help: "Bytes read by the backfill (ingest tail --from-start), by input: compressed bytes for .gz files.",
		}, []string{"file"}),
		backfillLines: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pagewatch_ingest_tail_backfill_lines_total",
			Help: "Lines read by the backfill (ingest tail --from-start), by input.",
		}, []string{"file"}),
		backfillTotal: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pagewatch_ingest_tail_backfill_planned_bytes",
			Help: "Bytes the backfill (ingest tail --from-start) has to read, by input: rotated files not yet published and the live file up to its size at start.",
		}, []string{"file"}),
	}
	reg.MustRegister(m.lines, m.malformed, m.filtered, m.classes, m.keyless, m.datedAhead, m.bytes, m.batches, m.retries, m.rotations,
		m.backfillBytes, m.backfillLines, m.backfillTotal)
	m.hits = m.lines.WithLabelValues("hit")
	m.malformedLines = m.lines.WithLabelValues("malformed")
	m.skippedLines = m.lines.WithLabelValues("skipped")
	for _, k := range []string{"rename", "truncate", "delete"} {
		m.rotations.WithLabelValues(k)
	}
	m.byReason = map[string]prometheus.Counter{}
	for _, r := range logformat.Reasons() {
		m.byReason[r] = m.malformed.WithLabelValues(r)
	}
	for _, c := range hit.Classes() {
		m.byClass = append(m.byClass, m.classes.WithLabelValues(c.String()))
	}
	m.byFilter = map[string]prometheus.Counter{}
	for _, f := range append(pageview.Reasons(), filterNoSite) {
		m.byFilter[f] = m.filtered.WithLabelValues(f)
	}
	return m
}

// skipped counts a parsed line that is no page view.
func (m *metrics) skipped(filter string) {
	m.skippedLines.Inc()
	if c, ok := m.byFilter[filter]; ok {
		c.Inc()
		return
	}
	m.filtered.WithLabelValues(filter).Inc()
}

// malformedLine counts a line that is no access-log line, by reason.
func (m *metrics) malformedLine(reason string) {
	m.malformedLines.Inc()
	if c, ok := m.byReason[reason]; ok {
		c.Inc()
		return
	}
	m.malformed.WithLabelValues(reason).Inc()
}
