// Package crossing defines a threshold crossing, the notification job that
// carries it from the sweeper to the workers, and the outcome a worker
// records for it.
package crossing

import (
	"encoding/json"
	"fmt"
	"time"
)

// Crossing is one page passing one rule's threshold, once. Key is
// deterministic (rule, page, episode), so every stage can deduplicate on it.
type Crossing struct {
	Key        string    `json:"key"`
	Rule       string    `json:"rule"`
	Site       string    `json:"site"`
	Path       string    `json:"path"`
	Window     string    `json:"window"` // "1h", or "all time"
	Threshold  uint64    `json:"threshold"`
	Count      uint64    `json:"count"`
	CrossedAt  time.Time `json:"crossed_at"`
	Recipients []string  `json:"recipients"`
}

// Marshal encodes the job body.
func (c Crossing) Marshal() ([]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode crossing %s: %w", c.Key, err)
	}
	return b, nil
}

// Unmarshal decodes a job body, rejecting one without a key.
func Unmarshal(data []byte) (Crossing, error) {
	var c Crossing
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("decode crossing job: %w", err)
	}
	if c.Key == "" {
		return c, fmt.Errorf("decode crossing job: no key")
	}
	return c, nil
}

// Outcome names what a worker did with a job.
type Outcome string

// Outcomes recorded in the notifications history.
const (
	Sent      Outcome = "sent"
	Duplicate Outcome = "duplicate" // already in the sent ledger
	Deferred  Outcome = "deferred"  // page locked by another worker
	Failed    Outcome = "failed"    // send failed; SMTPCode says how
	// HandedOff: the page was locked by another worker process, which
	// took the job to run under its lease; its next outcome comes from
	// that worker (or, if it died, from a redelivery).
	HandedOff Outcome = "handed_off"
	// RateLimited: a recipient is over its limit; the job comes back
	// when its slot is near.
	RateLimited Outcome = "rate_limited"
	// DeadLettered: failed for good (a 5xx); kept in the dead-letter stream.
	DeadLettered Outcome = "dead_lettered"
)

// Record is one row of the notifications history.
type Record struct {
	At       time.Time
	Crossing Crossing
	Outcome  Outcome
	SMTPCode int
	Error    string
	Worker   string
}
