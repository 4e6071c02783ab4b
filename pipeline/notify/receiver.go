package notify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pagewatch/pagewatch/broker/ratelimit"
)

// Receiver delivers notifications to one place: an email list, a
// webhook, a chat channel. Send makes one delivery (a sink may retry a
// few times inside it); its error says, through the methods below, what
// the worker should do next:
//
//   - Permanent() bool: true means no retry can help (a 4xx other than
//     429, a refused address): the delivery goes to the dead letters.
//   - RetryAfter() time.Duration: the service asked to be left alone this
//     long (HTTP 429 Retry-After): the job comes back after it.
//
// Any other error is retried with backoff until the receiver's
// give_up_after has passed since the crossing was queued, and then dead-
// lettered with the last error as the reason.
type Receiver interface {
	Send(ctx context.Context, n Notification) error
}

// ReceiverKind says how a receiver is rate-limited: email receivers share
// the SMTP account's limits (worker.rate_limit); every other kind has a
// limit of its own.
type ReceiverKind string

// Kinds of receivers.
const (
	KindEmail ReceiverKind = "email"
	KindOther ReceiverKind = "other"
)

// ReceiverSpec is one configured receiver as the worker sees it.
type ReceiverSpec struct {
	// Name is the receiver's name in the config ([a-z0-9_-], at most 64):
	// routes name it, and the ledger, metrics and history carry it.
	Name string
	Kind ReceiverKind
	// Open makes the Receiver for one runner. A receiver that keeps a
	// connection (SMTP) opens one per runner; others may return a shared
	// value.
	Open func() (Receiver, error)
	// RateLimit spaces this receiver's deliveries across all workers
	// (KindOther only; email uses worker.rate_limit). Zero: no limit.
	RateLimit ratelimit.Limit
	// GiveUpAfter bounds the retries of a failing delivery, counted from
	// when the job was queued: after it the delivery is dead-lettered.
	GiveUpAfter time.Duration
	// Quiet are the receiver's quiet hours; the zero value has none.
	Quiet QuietHours
	// To, for an email receiver, replaces the rule's recipients.
	To []string
}

// NamePattern is what a receiver name may be: it is part of KV keys and
// subjects.
const NamePattern = `^[a-z0-9_-]{1,64}$`

// ValidName reports whether s may name a receiver (NamePattern), without
// a regexp: it runs for every receiver of every config load.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// DefaultGiveUpAfter is how long a failing delivery is retried when the
// receiver does not say.
const DefaultGiveUpAfter = 24 * time.Hour

// Errors a sink returns to say what kind of failure it met. They wrap the
// cause; errors.Is and errors.As see through them.

type permanentErr struct{ err error }

func (e *permanentErr) Error() string   { return e.err.Error() }
func (e *permanentErr) Unwrap() error   { return e.err }
func (e *permanentErr) Permanent() bool { return true }

// Permanent marks err as one no retry can fix.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentErr{err: err}
}

type retryAfterErr struct {
	err   error
	after time.Duration
}

func (e *retryAfterErr) Error() string             { return e.err.Error() }
func (e *retryAfterErr) Unwrap() error             { return e.err }
func (e *retryAfterErr) RetryAfter() time.Duration { return e.after }

// RetryAfter marks err as a service's request to wait d before the next
// attempt (HTTP 429 with Retry-After).
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfterErr{err: err, after: d}
}

type retryAfterFailure interface{ RetryAfter() time.Duration }

// retryAfter is the wait a failure asks for, if it asks.
func retryAfter(err error) (time.Duration, bool) {
	var r retryAfterFailure
	if errors.As(err, &r) {
		return r.RetryAfter(), true
	}
	return 0, false
}

// validateSpecs checks the receivers handed to New.
func validateSpecs(specs []ReceiverSpec) error {
	seen := map[string]bool{}
	var errs []error
	for i, s := range specs {
		switch {
		case !ValidName(s.Name):
			errs = append(errs, fmt.Errorf("receiver %d: name %q: must match %s", i, s.Name, NamePattern))
		case seen[s.Name]:
			errs = append(errs, fmt.Errorf("receiver %q: given twice", s.Name))
		case s.Open == nil:
			errs = append(errs, fmt.Errorf("receiver %q: no Open", s.Name))
		}
		seen[s.Name] = true
	}
	return errors.Join(errs...)
}
