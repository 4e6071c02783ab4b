package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/pipeline/notify"
)

// Config is a webhook receiver's `webhook:` block.
type Config struct {
	URL secret.Value `yaml:"url"` // a secret: URLs often carry a token
	// Secret is the HMAC-SHA256 key the body is signed with (at least
	// 16 bytes); the receiving end verifies with the same key.
	Secret   secret.Value  `yaml:"secret"`
	Timeout  time.Duration `yaml:"timeout"`
	Attempts int           `yaml:"attempts"`
}

// MinSecretLen is the shortest signing secret accepted.
const MinSecretLen = 16

// Validate reports every problem, naming the key (e.g. "receivers[1].webhook").
func (c Config) Validate(key string) error {
	var errs []error
	if err := c.URL.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s.url: %w", key, err))
	} else if err := checkURL(key+".url", c.URL.Reveal()); err != nil {
		errs = append(errs, err)
	}
	if err := c.Secret.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s.secret: %w", key, err))
	} else if len(c.Secret.Reveal()) < MinSecretLen {
		errs = append(errs, fmt.Errorf("%s.secret: must be at least %d bytes", key, MinSecretLen))
	}
	errs = append(errs, HTTP{Timeout: c.Timeout, Attempts: c.Attempts}.validate(key))
	return errors.Join(errs...)
}

// defaultLimit: our webhook has no published limit.
func (Config) defaultLimit() ratelimit.Limit { return noPublishedLimit }

func (c Config) receiver(name string) (notify.Receiver, error) { return asReceiver(New(name, c)) }

// Schema names the version of the body. A change that could break a
// reader gets a new version; fields may be added within one.
const Schema = "pagewatch.notification/v1"

// Headers of a webhook request.
const (
	// HeaderSignature is "t=<unix seconds>,v1=<hex HMAC-SHA256>", the HMAC
	// taken over "<t>.<body>" with the receiver's secret.
	HeaderSignature = "Pagewatch-Signature"
	// HeaderID repeats the body's id: the same on every retry of one
	// delivery, for the receiving end to drop repeats.
	HeaderID = "Pagewatch-Webhook-Id"
)

// Payload is the body of a webhook request (schema v1).
type Payload struct {
	Schema string `json:"schema"`
	// ID identifies the delivery of one crossing to one receiver: it is
	// the same on every attempt, so a receiver that saw it may ignore it.
	ID       string     `json:"id"`
	Receiver string     `json:"receiver"`
	Crossing CrossingV1 `json:"crossing"`
}

// CrossingV1 is the crossing in a v1 payload.
type CrossingV1 struct {
	Key       string            `json:"key"`
	Rule      string            `json:"rule"`
	Site      string            `json:"site"`
	Path      string            `json:"path"`
	Count     uint64            `json:"count"`
	Threshold uint64            `json:"threshold"`
	Window    string            `json:"window"`
	CrossedAt time.Time         `json:"crossed_at"`
	Labels    map[string]string `json:"labels,omitempty"`
	// Subject and Body are the rule's own texts, when it has them.
	Subject string `json:"subject,omitempty"`
	Body    string `json:"body,omitempty"`
	// Digest lists the crossings of a storm guard's or quiet hours'
	// digest; Total counts them all, listed or not.
	Digest *DigestV1 `json:"digest,omitempty"`
	// Why says why the page moved (docs/receivers.md): the crossing's
	// why as the sweeper wrote it in the job, absent for digests.
	Why *crossing.Why `json:"why,omitempty"`
}

// DigestV1 is a digest in a v1 payload.
type DigestV1 struct {
	Total int            `json:"total"`
	Items []DigestItemV1 `json:"items"`
}

// DigestItemV1 is one crossing of a digest.
type DigestItemV1 struct {
	Path      string `json:"path"`
	Count     uint64 `json:"count"`
	Threshold uint64 `json:"threshold"`
}

// NewPayload is the body for n sent to receiver.
func NewPayload(receiver string, n notify.Notification) Payload {
	p := Payload{Schema: Schema, ID: notify.LedgerKey(n.Key, receiver), Receiver: receiver, Crossing: CrossingV1{
		Key: n.Key, Rule: n.Rule, Site: n.Site, Path: n.Path, Count: n.Count, Threshold: n.Threshold,
		Window: n.Window, CrossedAt: n.CrossedAt.UTC(), Labels: n.Labels, Subject: n.Subject, Body: n.Body,
		Why: n.Why,
	}}
	if n.Digest != nil || n.DigestTotal > 0 {
		d := &DigestV1{Total: max(n.DigestTotal, len(n.Digest)), Items: []DigestItemV1{}}
		for _, it := range n.Digest {
			d.Items = append(d.Items, DigestItemV1{Path: it.Path, Count: it.Count, Threshold: it.Threshold})
		}
		p.Crossing.Digest = d
	}
	return p
}

// Webhook is a signed JSON webhook receiver.
type Webhook struct {
	name, url string
	secret    []byte
	post      *poster
	now       func() time.Time
}

// New makes the webhook receiver called name.
func New(name string, cfg Config) (*Webhook, error) {
	if err := cfg.Validate("webhook"); err != nil {
		return nil, err
	}
	return &Webhook{name: name, url: cfg.URL.Reveal(), secret: []byte(cfg.Secret.Reveal()),
		post: newPoster("webhook receiver "+name, HTTP{Timeout: cfg.Timeout, Attempts: cfg.Attempts}), now: time.Now}, nil
}

// Send posts n, signed; each attempt is signed afresh.
func (w *Webhook) Send(ctx context.Context, n notify.Notification) error {
	p := NewPayload(w.name, n)
	body, err := json.Marshal(p)
	if err != nil {
		return notify.Permanent(fmt.Errorf("encode webhook body: %w", err))
	}
	newReq := func() (*http.Request, error) {
		h := http.Header{}
		h.Set(HeaderSignature, Sign(w.secret, w.now(), body))
		h.Set(HeaderID, p.ID)
		return jsonRequest(w.url, body, h)()
	}
	return w.post.post(ctx, newReq, checkStatus)
}

// Sign returns the signature header's value for body sent at t.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

func mac(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Errors of Verify.
var (
	ErrNoSignature   = errors.New("no valid signature header")
	ErrBadSignature  = errors.New("signature does not match")
	ErrOutsideWindow = errors.New("timestamp outside the replay window")
)

// DefaultWindow is the replay window the docs recommend: a request more
// than this far from the receiving end's clock is refused.
const DefaultWindow = 5 * time.Minute

// Verify checks a request's signature header against its raw body: the
// HMAC must match (several v1= values are allowed, any may match) and the
// timestamp must be within window of now, either way. This is the
// receiving end's code; a Go receiver may call it as it is.
func Verify(secret []byte, header string, body []byte, now time.Time, window time.Duration) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrNoSignature
	}
	if d := now.Sub(time.Unix(sec, 0)); d > window || d < -window {
		return fmt.Errorf("%w: %s off", ErrOutsideWindow, d.Round(time.Second))
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return ErrBadSignature
}
