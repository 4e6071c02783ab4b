package workerconf

import (
	"errors"
	"fmt"
	netmail "net/mail"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/sinks/webhook"
)

// Receiver is one entry of the `receivers:` list: a named place the
// worker delivers crossings to (docs/receivers.md). Exactly the block of
// its type is given (email's may be left out).
type Receiver struct {
	Name string `yaml:"name"` // [a-z0-9_-]: routes name it
	// Type is email or one of webhook.Kinds (webhook, slack, ...).
	Type string `yaml:"type"`
	// RateLimit spaces this receiver's deliveries across all workers.
	// Left out: the service's published limit (webhook.DefaultLimit).
	// Email receivers use worker.rate_limit instead.
	RateLimit *ratelimit.Limit `yaml:"rate_limit"`
	// GiveUpAfter: a delivery still failing this long after its crossing
	// was queued is dead-lettered. 0: 24h.
	GiveUpAfter time.Duration     `yaml:"give_up_after"`
	QuietHours  notify.QuietHours `yaml:"quiet_hours"`

	Email *EmailReceiver `yaml:"email"`
	// The other kinds' blocks (webhook:, slack:, ...), a field each,
	// declared and validated where the kinds are.
	webhook.Blocks `yaml:",inline"`
}

// EmailReceiver is an email receiver's `email:` block. Mail goes out
// through the `mail:` section's transport.
type EmailReceiver struct {
	// To replaces the rule's recipients; empty: each rule's own.
	To []string `yaml:"to"`
}

// ReceiverTypeEmail is the type of email receivers.
const ReceiverTypeEmail = "email"

// DefaultReceivers is the one receiver of a config that lists none:
// email to each rule's recipients.
func DefaultReceivers() []Receiver {
	return []Receiver{{Name: notify.DefaultReceiver, Type: ReceiverTypeEmail}}
}

// Limit is the receiver's rate limit in force.
func (r Receiver) Limit() ratelimit.Limit {
	if r.RateLimit != nil {
		return *r.RateLimit
	}
	return webhook.DefaultLimit(r.Type)
}

// Names lists the receivers' names, in order.
func Names(rs []Receiver) []string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Name
	}
	return names
}

// ValidateReceivers checks the receivers: list.
func ValidateReceivers(rs []Receiver) error {
	if len(rs) == 0 {
		return errors.New("receivers: at least one receiver must be configured")
	}
	var errs []error
	seen := map[string]bool{}
	for i, r := range rs {
		key := fmt.Sprintf("receivers[%d]", i)
		if !notify.ValidName(r.Name) {
			errs = append(errs, fmt.Errorf("%s.name: must match %s, got %q", key, notify.NamePattern, r.Name))
		} else if seen[r.Name] {
			errs = append(errs, fmt.Errorf("%s.name: %q is given twice", key, r.Name))
		}
		seen[r.Name] = true
		errs = append(errs, r.validate(key))
	}
	return errors.Join(errs...)
}

func (r Receiver) validate(key string) error {
	if _, ok := webhook.LookupKind(r.Type); !ok && r.Type != ReceiverTypeEmail {
		return fmt.Errorf("%s.type: must be %s, got %q", key, orList(receiverTypes()), r.Type)
	}
	errs := []error{webhook.ValidateBlocks(r.Blocks, r.Type, key)}
	if r.Email != nil && r.Type != ReceiverTypeEmail {
		errs = append(errs, fmt.Errorf("%s.%s: given for a receiver of type %s", key, ReceiverTypeEmail, r.Type))
	}
	if r.Type == ReceiverTypeEmail {
		if r.RateLimit != nil {
			errs = append(errs, fmt.Errorf("%s.rate_limit: email receivers use worker.rate_limit", key))
		}
		if r.Email != nil {
			for _, a := range r.Email.To {
				if _, err := netmail.ParseAddress(a); err != nil {
					errs = append(errs, fmt.Errorf("%s.email.to: %q: %w", key, a, err))
				}
			}
		}
	}
	if r.RateLimit != nil {
		errs = append(errs, r.RateLimit.Validate(key+".rate_limit"))
	}
	if r.GiveUpAfter < 0 {
		errs = append(errs, fmt.Errorf("%s.give_up_after: must not be negative, got %s", key, r.GiveUpAfter))
	}
	errs = append(errs, r.QuietHours.Validate(key+".quiet_hours"))
	return errors.Join(errs...)
}

// receiverTypes lists the receiver types: email, then the kinds of
// sinks/webhook.
func receiverTypes() []string {
	types := []string{ReceiverTypeEmail}
	for _, k := range webhook.Kinds() {
		types = append(types, k.Name)
	}
	return types
}

// orList writes "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}
