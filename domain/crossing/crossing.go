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
// deterministic (rule, page, and the episode, window or milestone), so
// every stage can deduplicate on it.
type Crossing struct {
	Key        string    `json:"key"`
	Rule       string    `json:"rule"`
	Site       string    `json:"site"`
	Path       string    `json:"path"`   // for a sum rule or a digest, the rule's match as written
	Window     string    `json:"window"` // "1h", "day", or "all time"
	Threshold  uint64    `json:"threshold"`
	Count      uint64    `json:"count"`
	CrossedAt  time.Time `json:"crossed_at"`
	Recipients []string  `json:"recipients"`

	// WindowFrom and WindowTo bound what Count covers, [from, to); zero
	// for all-time windows. Calendar windows are cut in the rule's zone.
	WindowFrom time.Time `json:"window_from,omitzero"`
	WindowTo   time.Time `json:"window_to,omitzero"`
	// Labels are the rule's notify.labels.
	Labels map[string]string `json:"labels,omitempty"`
	// Subject and Body are the rule's own templates, already rendered;
	// empty means the mailer's default.
	Subject string `json:"subject,omitempty"`
	Body    string `json:"body,omitempty"`
	// Event is what an episodic rule's message says: fire (also empty,
	// as threshold crossings have always been), escalate or resolve.
	Event string `json:"event,omitempty"`
	// Why explains the crossing (why.go); nil for crossings recorded
	// before it existed.
	Why *Why `json:"why,omitempty"`
	// Digest, when set, makes this job a storm guard's summary: the
	// crossings of one rule in one sweep beyond those mailed one by one.
	Digest *Digest `json:"digest,omitempty"`
	// Receivers, when set, are the receivers the rule names: the worker
	// sends to exactly these instead of routing the crossing.
	Receivers []string `json:"receivers,omitempty"`
}

// Digest is a storm guard's summary of many crossings of one rule.
type Digest struct {
	// Items are the folded crossings, the highest counts first, at most
	// MaxDigestItems of them; Total says how many there were in all.
	Items []Item `json:"items"`
	Total int    `json:"total"`
}

// Item is one crossing in a digest.
type Item struct {
	Key       string `json:"key"`
	Path      string `json:"path"`
	Threshold uint64 `json:"threshold"`
	Count     uint64 `json:"count"`
}

// MaxDigestItems bounds a digest job: a JetStream message is at most
// 1 MiB, and nobody reads ten thousand lines of mail. Every folded
// crossing is still recorded one by one in the crossings table.
const MaxDigestItems = 1000

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
	// Silenced: a silence matched the crossing; nothing was sent.
	Silenced Outcome = "silenced"
	// Held: inside the receiver's quiet hours; it goes out in the digest
	// sent when they end.
	Held Outcome = "held"
	// Quiet: inside the receiver's quiet hours, which only record.
	Quiet Outcome = "quiet"
)

// Record is one row of the notifications history.
type Record struct {
	At       time.Time
	Crossing Crossing
	Outcome  Outcome
	SMTPCode int
	Error    string
	Worker   string
	// Receiver is the receiver the outcome is about; "" for outcomes of
	// the whole job (deferred, handed_off, silenced).
	Receiver string
}
