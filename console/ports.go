package console

import (
	"context"
	"time"

	"github.com/pagewatch/pagewatch/console/records"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/pipeline/silence"
)

// Store is what the console reads from (and records in) ClickHouse. The
// console owns this port; sinks/clickhouse implements it. Every read is
// bounded by time and a limit, so a page answers in the same time at 100
// thousand pages as at ten.
type Store interface {
	HistoryStore
	TrafficStore
}

// HistoryStore reads the crossings and notification outcomes, and
// records what operators did to dead letters.
type HistoryStore interface {
	// Crossings returns the crossings matching q, newest first.
	Crossings(ctx context.Context, q HistoryQuery) ([]CrossingRow, error)
	// Outcomes returns the notification outcomes of the given crossings,
	// oldest first.
	Outcomes(ctx context.Context, keys []string) ([]OutcomeRow, error)
	// RecordAction appends an operator's action on a dead letter.
	RecordAction(ctx context.Context, a Action) error
	// Actions returns the latest actions, newest first.
	Actions(ctx context.Context, since time.Time, limit int) ([]Action, error)
	// LastFired returns, per rule and page, the last crossing since a
	// time of the given rules.
	LastFired(ctx context.Context, rules []string, since time.Time) ([]CrossingRow, error)
}

// TrafficStore reads the page counts.
type TrafficStore interface {
	// Live returns the pages with the most views in [now-1h, now), at most
	// limit per site, with their views in the last 5 minutes and per
	// minute over the hour.
	Live(ctx context.Context, q LiveQuery) ([]LivePage, error)
	// DayTotals returns the sealed daily counts of the days in [from, to)
	// of the given sites' and paths' pages (every pair of them: callers
	// filter).
	DayTotals(ctx context.Context, sites, paths []string, from, to time.Time) ([]DayTotal, error)
	// PageSeries returns a page's views per minute in [from, to).
	PageSeries(ctx context.Context, site, path string, from, to time.Time) ([]traffic.MinuteHits, error)
	// SiteStart returns the site's first minute with hits (zero: none):
	// before it a page's views are unknown, after it a page without
	// views had none, as the sweep judges them.
	SiteStart(ctx context.Context, site string) (time.Time, error)
	// SiteHours returns each site's views per UTC hour in [from, to), for
	// the clocks its readers keep (clocks.Learner).
	SiteHours(ctx context.Context, from, to time.Time) ([]traffic.SiteHour, error)
	// PageHourSeries returns a page's views per hour in [from, to).
	PageHourSeries(ctx context.Context, site, path string, from, to time.Time) ([]traffic.MinuteHits, error)
	// TopReferrers returns the referers that sent a page the most hits.
	TopReferrers(ctx context.Context, site, path string, from, to time.Time, limit int) ([]traffic.Referrer, error)
	// PageCounts returns the views in [from, to) of the given sites' and
	// paths' pages (every pair of them with views: callers filter), read
	// by the pages' key.
	PageCounts(ctx context.Context, sites, paths []string, from, to time.Time) ([]PageViews, error)
	// TopPages returns the pages of a site ("" every site) with the most
	// views in [from, to), most first.
	TopPages(ctx context.Context, site string, from, to time.Time, limit int) ([]PageViews, error)
	// Freshness says how far the loaded and sealed counts reach.
	Freshness(ctx context.Context) (Freshness, error)
	VisitorStore
}

// VisitorStore reads who sent a page's hits: its visitors (distinct
// client keys among its views) and its hits per client class. Client
// keys change every UTC day, and are kept as long as the raw hits.
type VisitorStore interface {
	// PageVisitors returns a page's visitors in each step (a minute or
	// an hour) of [from, to), as MinuteHits whose Hits are visitors;
	// steps without any are absent.
	PageVisitors(ctx context.Context, site, path string, from, to time.Time, step time.Duration) ([]traffic.MinuteHits, error)
	// PageClasses returns a page's hits per client class in [from, to),
	// counted as views or not, most first.
	PageClasses(ctx context.Context, site, path string, from, to time.Time) ([]ClassCount, error)
}

// The rows the store returns are package records' (see there): the
// store implements the console's ports without importing the console.

// HistoryQuery is records.HistoryQuery.
type HistoryQuery = records.HistoryQuery

// CrossingRow is records.CrossingRow.
type CrossingRow = records.CrossingRow

// OutcomeRow is records.OutcomeRow.
type OutcomeRow = records.OutcomeRow

// Action is records.Action.
type Action = records.Action

// LiveQuery is records.LiveQuery.
type LiveQuery = records.LiveQuery

// LivePage is records.LivePage.
type LivePage = records.LivePage

// ClassCount is records.ClassCount.
type ClassCount = records.ClassCount

// DayTotal is records.DayTotal.
type DayTotal = records.DayTotal

// PageViews is records.PageViews.
type PageViews = records.PageViews

// Freshness is records.Freshness.
type Freshness = records.Freshness

// DeadLetters are the messages the loader and the worker could not
// process (the dead-letter stream), to look at, retry or discard.
type DeadLetters interface {
	// List returns the newest dead letters first, at most limit.
	List(ctx context.Context, limit int) ([]DeadLetter, error)
	// Retry puts a dead letter back where it came from and removes it.
	Retry(ctx context.Context, seq uint64) (DeadLetter, error)
	// Discard removes a dead letter.
	Discard(ctx context.Context, seq uint64) (DeadLetter, error)
}

// DeadLetter is one message in the dead-letter stream.
type DeadLetter struct {
	Seq      uint64    `json:"seq"`
	Kind     string    `json:"kind"` // jobs or hits
	At       time.Time `json:"at"`
	Reason   string    `json:"reason"`
	Subject  string    `json:"subject"`  // where it was
	Receiver string    `json:"receiver"` // for a job: the receiver that failed
	Bytes    int       `json:"bytes"`
	// For a job, the crossing it carries.
	Key  string `json:"key,omitempty"`
	Rule string `json:"rule,omitempty"`
	Site string `json:"site,omitempty"`
	Path string `json:"path,omitempty"`
}

// PipelineSource reads the pipeline's state from NATS.
type PipelineSource interface {
	Pipeline(ctx context.Context) (PipelineState, error)
}

// PipelineState is what NATS knows of the pipeline.
type PipelineState struct {
	Streams   []StreamState   `json:"streams"`
	Consumers []ConsumerState `json:"consumers"`
	Files     []FileState     `json:"files"`
	Locks     int             `json:"worker_locks_held"`
	// SweptTo is how far the sweeper has evaluated (its progress key).
	SweptTo time.Time `json:"swept_to"`
	// Operator is what the daemons report of themselves (pipeline_nats.go).
	Operator OperatorState `json:"operator"`
}

// StreamState is one JetStream stream.
type StreamState struct {
	Name     string    `json:"name"`
	Messages uint64    `json:"messages"`
	Bytes    uint64    `json:"bytes"`
	LastSeq  uint64    `json:"last_seq"`
	LastAt   time.Time `json:"last_at"`
}

// ConsumerState is one durable consumer.
type ConsumerState struct {
	Stream      string `json:"stream"`
	Name        string `json:"name"`
	Pending     uint64 `json:"pending"`     // not yet delivered
	AckPending  int    `json:"ack_pending"` // delivered, not yet acknowledged
	Redelivered int    `json:"redelivered"`
	AckFloor    uint64 `json:"ack_floor"` // the stream sequence acknowledged up to
}

// FileState is one tailed file: the last message published for it.
type FileState struct {
	Subject string    `json:"subject"`
	LastAt  time.Time `json:"last_at"`
	LastSeq uint64    `json:"last_seq"`
	// Loaded reports whether the loader has taken that message.
	Loaded bool `json:"loaded"`
}

// RuleStates reads the sweeper's state of a rule's page.
type RuleStates interface {
	// State returns the state of rule on a page (site and path empty for
	// a sum rule); ok is false when the sweeper has none.
	State(ctx context.Context, rule, site, path string, sum bool) (RuleState, bool, error)
}

// RuleState is the sweeper's state of one rule and page.
type RuleState struct {
	Fired     []uint64  `json:"fired,omitempty"`
	Window    string    `json:"window,omitempty"`
	LastFired time.Time `json:"last_fired,omitzero"`
	Open      bool      `json:"open"`
	// OpenSince is when the open episode fired (zero: none open), for
	// the rules page's "episode open since".
	OpenSince time.Time `json:"open_since,omitzero"`
	Pending   int       `json:"pending"` // crossings claimed, not yet handed on
	// Held is why the client guard holds the page's surge from firing
	// ("mostly one client: 97% of 1,204 views"); "" when nothing is held.
	Held string `json:"held,omitempty"`
	// Level is the new level a page that rose for good is judged at
	// (unusual rules); nil: none. The page's band is drawn at it.
	Level *rules.Raised `json:"level,omitempty"`
}

// Silences are the worker's silences (kept in NATS KV; pipeline/notify
// implements this).
type Silences interface {
	List(ctx context.Context) ([]silence.Silence, error)
	Add(ctx context.Context, sl silence.Silence, now time.Time) (silence.Silence, error)
	Expire(ctx context.Context, id string, now time.Time) (silence.Silence, error)
}
