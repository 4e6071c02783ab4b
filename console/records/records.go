// Package records holds what the console reads from its store: rows of
// the crossings history, of page views and of who sent them. The console
// declares the store's interfaces (console.Store); sinks/clickhouse
// implements them with these types, so that the store need not import the
// console, nor anything the console imports.
package records

import (
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

// HistoryQuery filters the history. Empty strings match everything.
type HistoryQuery struct {
	Site, Rule, Path, Outcome string
	From, To                  time.Time
	Limit, Offset             int
}

// CrossingRow is one crossing in the history.
type CrossingRow struct {
	Key, Rule, Site, Path, Window string
	Threshold, Count              uint64
	CrossedAt                     time.Time
}

// OutcomeRow is what a worker did with a crossing.
type OutcomeRow struct {
	Key      string
	At       time.Time
	Outcome  string
	SMTPCode uint16
	Error    string
	Worker   string
}

// Action is what an operator did to a dead letter.
type Action struct {
	At                         time.Time
	User                       string
	Action                     string // retry or discard
	Kind                       string // jobs or hits
	Seq                        uint64 // the dead letter's sequence in the dead-letter stream
	Key                        string // the crossing key, for a job
	Rule, Site, Path, Receiver string
	Reason                     string // why it was dead-lettered
}

// LiveQuery asks for the pages moving now.
type LiveQuery struct {
	Site    string // "" every site
	Now     time.Time
	PerSite int
}

// LivePage is one page's views in the last hour.
type LivePage struct {
	Site, Path string
	Views5m    uint64
	Views1h    uint64
	// Visitors5m and Visitors1h are the distinct client keys among those
	// views (0 when no tailer keys clients).
	Visitors5m uint64
	Visitors1h uint64
	// Minutes are the views in each of the last 60 minutes, oldest first.
	Minutes []uint64
}

// ClassCount is one client class's hits on a page over a span, and the
// distinct client keys that sent them.
type ClassCount struct {
	traffic.ClassHits
	Clients uint64
}

// DayTotal is one page's views on one UTC day.
type DayTotal struct {
	Site, Path string
	Day        time.Time
	Hits       uint64
}

// PageViews is one page's views over a span.
type PageViews struct {
	Site, Path string
	Views      uint64
}

// Freshness is how far the counts in ClickHouse reach.
type Freshness struct {
	LastMinute  time.Time `json:"last_minute"`  // the newest minute with loaded views
	LastHit     time.Time `json:"last_hit"`     // the newest raw hit
	SealedDay   time.Time `json:"sealed_day"`   // the newest day sealed in page_days
	SealedHours time.Time `json:"sealed_hours"` // the newest day sealed in page_hours
}
