package tail

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/pipeline/classify"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
	"github.com/pagewatch/pagewatch/pipeline/pageview"
	"github.com/pagewatch/pagewatch/pipeline/visitor"
)

// hitBatch turns the lines of one input into a batch of hits: each line
// is parsed, given its site, filtered and encoded, or counted by why
// not. A file's follower and a stream (stdin, syslog) each fill one.
type hitBatch struct {
	parser  logformat.Parser
	site    string            // the input's site; "" takes each line's virtual host
	sites   map[string]string // vhost as logged → site, when site is ""
	pages   *pageview.Normalizer
	salts   *visitor.Salts // nil: visitors are off, hits carry no client key
	now     func() time.Time
	metrics *metrics
	logger  *slog.Logger

	enc   hit.Encoder
	entry logformat.Entry
	lines int // lines in the batch, hits or not
	// classes is this batch's own cache of pages' classifier, made on
	// first use: a batch is filled by one goroutine, so it needs no lock.
	classes *classify.Cache
	// keys makes the client keys, with the salt of keyDay (the UTC day,
	// in days since 1970, of the last line keyed) in hand.
	keys     *visitor.Keyer
	keyDay   int64
	saltWait time.Duration // saltWait, but a test's shorter
	// last is the line keyed last: its address and user agent, and its
	// key. A client's page views often come one after the other.
	lastAddr, lastUA []byte
	lastKey          uint64
	// The malformed lines' warning: the first at once, then at most one
	// a minute with how many came between (a file of junk is not a log
	// flood), each naming the line by its byte offset.
	warnedAt   time.Time
	unreported int
	// aheadOf is the latest date a line may have without being dated
	// ahead: the clock plus aheadSlack, read again when a line is past
	// it and at each batch, so that a log in order costs no clock read
	// a line. The
	// dated-ahead lines' warning is limited as the malformed ones' is.
	aheadOf         time.Time
	aheadWarnedAt   time.Time
	aheadUnreported int
}

// aheadSlack is how far ahead of the tailer's clock a line may be dated
// and not be reported: clocks that drift, and a line's own second (the
// sweeper allows as much for a site's newest minute).
const aheadSlack = 5 * time.Minute

// malformedEvery is how often malformed lines are logged at warning.
const malformedEvery = time.Minute

// lineRules is what every input's lines are judged by: which are page
// views, and how their clients are keyed.
type lineRules struct {
	pages *pageview.Normalizer
	salts *visitor.Salts   // nil: visitors are off
	now   func() time.Time // nil: time.Now
}

// withClock is r with lines dated against now (nil: time.Now).
func (r lineRules) withClock(now func() time.Time) lineRules {
	r.now = now
	return r
}

// newLineRules makes the rules of cfg; the salts are read from NATS on
// first use.
func newLineRules(cfg Config, pages *pageview.Normalizer, b *bus.Bus, reg prometheus.Registerer) lineRules {
	r := lineRules{pages: pages}
	if cfg.Visitors.Enabled {
		r.salts = visitor.NewSalts(b, reg, nil)
	}
	return r
}

func newHitBatch(p logformat.Parser, site string, r lineRules, m *metrics, logger *slog.Logger) hitBatch {
	now := r.now
	if now == nil {
		now = time.Now
	}
	return hitBatch{parser: p, site: site, pages: r.pages, salts: r.salts, now: now, metrics: m, logger: logger}
}

// saltWait bounds the wait for a new day's salt: NATS being down then
// leaves the line without a client key (counted in
// pagewatch_ingest_tail_hits_keyless_total) rather than stalling the
// file, whose publishes wait for NATS anyway.
const saltWait = 10 * time.Second

// clientKey is the line's client key, or 0 when visitors are off or the
// day's salt could not be had.
func (b *hitBatch) clientKey(t time.Time) uint64 {
	if b.salts == nil {
		return visitor.NoKey
	}
	if b.keys == nil {
		b.keys = b.salts.Keyer()
	}
	ctx := context.Background()
	day := t.Unix() / 86400
	if day == b.keyDay && b.lastKey != visitor.NoKey && bytes.Equal(b.entry.Client, b.lastAddr) && bytes.Equal(b.entry.UserAgent, b.lastUA) {
		return b.lastKey
	}
	// Only a line of another day than the last may wait for NATS: the
	// salt of the day in hand is held in memory.
	if day != b.keyDay {
		var cancel context.CancelFunc
		wait := b.saltWait
		if wait == 0 {
			wait = saltWait
		}
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
		b.keyDay = day
	}
	k, err := b.keys.Key(ctx, t, b.entry.Client, b.entry.UserAgent)
	if err != nil {
		b.keyDay = 0 // try again on the next line
		b.metrics.keyless.Inc()
		b.logger.Warn("no client key for the line: visitors will be undercounted", "err", err)
		b.lastKey = visitor.NoKey
		return visitor.NoKey
	}
	b.lastAddr = append(b.lastAddr[:0], b.entry.Client...)
	b.lastUA = append(b.lastUA[:0], b.entry.UserAgent...)
	b.lastKey = k
	return k
}

// add turns one line, without its newline, into a hit in the batch, or
// counts why not. offset is where the line starts in its file or stream:
// with the message's JetStream sequence it names the line for the loader.
func (b *hitBatch) add(line []byte, offset int64) {
	b.lines++
	m := b.metrics
	if err := b.parser.Parse(line, &b.entry); err != nil {
		reason := "unknown"
		var pe *logformat.ParseError
		if errors.As(err, &pe) {
			reason = pe.Reason
		}
		b.malformed(line, offset, reason)
		return
	}
	// ClickHouse keeps a second from 1970 to 2106 (DateTime): a line
	// dated outside is junk, and stored it would wrap to another year.
	if t := b.entry.Time.Unix(); t < 0 || t >= 1<<32 {
		b.malformed(line, offset, logformat.ReasonTime)
		return
	}
	if b.entry.Time.After(b.aheadOf) {
		b.checkAhead(line, offset)
	}
	site := b.site
	if site == "" {
		if site = b.siteOf(b.entry.Vhost); site == "" {
			m.skipped(filterNoSite)
			b.logger.Debug("line names no virtual host", "offset", offset)
			return
		}
		if !b.pages.SiteListed(site) {
			m.skipped(pageview.DropSite)
			return
		}
	}
	// h shares the line's bytes until enc.Add copies them, below.
	var h hit.Hit
	if drop := b.pages.Fill(&h, &b.entry, site); drop != "" {
		m.skipped(drop)
		return
	}
	if b.classes == nil {
		b.classes = b.pages.Classifier().NewCache(0)
	}
	h.Class = b.classes.Class(b.entry.UserAgent)
	h.Uncounted = !b.pages.Counts(h.Class)
	// Only views are keyed: visitors are counted among them, and a
	// crawler's key would be one more hash a line for nothing (and, in
	// page_clients, a row per crawler where one per class will do).
	if !h.Uncounted {
		h.Client = b.clientKey(h.Time)
	}
	h.Offset = uint64(offset)
	b.enc.Add(&h)
	m.hits.Inc()
	m.byClass[h.Class].Inc()
}

// tooLong counts a line over max_line_bytes, dropped unparsed; the
// caller logs it.
func (b *hitBatch) tooLong() {
	b.lines++
	b.metrics.malformedLine(logformat.ReasonTooLong)
}

// malformed counts a line that is no access-log line, and says so: at
// warning for the first and then once a minute, naming the line by its
// byte offset (the logger names the file or input), with its start.
func (b *hitBatch) malformed(line []byte, offset int64, reason string) {
	b.metrics.malformedLine(reason)
	now := time.Now()
	if !b.warnedAt.IsZero() && now.Sub(b.warnedAt) < malformedEvery {
		b.unreported++
		b.logger.Debug("malformed line", "offset", offset, "reason", reason)
		return
	}
	b.logger.Warn("malformed line skipped; the lines after it are read", "offset", offset, "reason", reason,
		"line", shortLine(line), "malformed_not_logged_since_last", b.unreported)
	b.warnedAt, b.unreported = now, 0
}

// checkAhead reports a line dated ahead of the clock by more than
// aheadSlack. It is counted all the same, at its own time: a line is a
// view that happened, and its date is the only one it has. A server
// whose clock runs ahead, or a log format without a zone read as UTC
// on a server east of it, dates every line so: the warning says which
// input and by how much, and the sweeper does not take such minutes
// for a site's newest.
func (b *hitBatch) checkAhead(line []byte, offset int64) {
	clock := b.now()
	b.aheadOf = clock.Add(aheadSlack)
	if !b.entry.Time.After(b.aheadOf) {
		return
	}
	b.metrics.datedAhead.Inc()
	if !b.aheadWarnedAt.IsZero() && clock.Sub(b.aheadWarnedAt) < malformedEvery {
		b.aheadUnreported++
		return
	}
	b.logger.Warn("line dated ahead of this host's clock, counted at its own time: is the server's clock, or the log format's zone, wrong?",
		"offset", offset, "ahead", b.entry.Time.Sub(clock).Round(time.Second), "line", shortLine(line),
		"dated_ahead_not_logged_since_last", b.aheadUnreported)
	b.aheadWarnedAt, b.aheadUnreported = clock, 0
}

// shortLine is the start of a line for a log: at most 200 bytes (the
// handlers quote a NUL or an escape sequence rather than send it on).
func shortLine(line []byte) string {
	if len(line) > 200 {
		line = line[:200]
	}
	return string(line)
}

// reset starts the next batch.
func (b *hitBatch) reset() {
	b.enc.Reset()
	b.lines = 0
	b.aheadOf = time.Time{} // read the clock again: it may have been stepped back
}

// maxSites bounds the cache of vhost → site. Host headers are the
// client's to choose, so past the bound a site is built per line.
const maxSites = 1024

// siteOf returns the site of a line's vhost, or "" when it names none.
// Host headers ($http_host, %{Host}i) may carry a port and any case, so
// the site is the vhost lowercased, without its port or trailing dot.
// Known vhosts cost no allocation.
func (b *hitBatch) siteOf(vhost []byte) string {
	if s, ok := b.sites[string(vhost)]; ok {
		return s
	}
	s := normalizeHost(vhost)
	if b.sites == nil {
		b.sites = make(map[string]string)
	}
	if len(b.sites) < maxSites {
		b.sites[string(vhost)] = s
	}
	return s
}
