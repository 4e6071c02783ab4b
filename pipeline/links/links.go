// Package links makes and serves the links in emails: an unsubscribe
// link (List-Unsubscribe, RFC 8058 one-click) and a "snooze this page"
// link. Each is a signed token in a
// URL under worker.links.base_url: HMAC-SHA256 over the claims (action,
// recipient, rule, site and path for a snooze, expiry) with
// worker.links.secret. The worker serves the links on its admin listener
// (API); what a token says is all the endpoint trusts. It also keeps the
// unsubscribes those links make (Unsubscribes), the only code that
// touches their bucket.
package links

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/domain/crossing"
)

// Config is `worker.links`. Without base_url and secret, mails carry
// no links and no List-Unsubscribe header.
type Config struct {
	// BaseURL is the public URL at which the worker's Prefix is
	// reached (through a proxy in front of worker.listen), e.g.
	// https://pagewatch.example.com: links are BaseURL + /links/….
	BaseURL string `yaml:"base_url"`
	// Secret signs the tokens: at least 32 bytes. Changing it voids every
	// link already mailed.
	Secret secret.Value `yaml:"secret"`
	// TTL is how long a link works after the mail is sent.
	TTL time.Duration `yaml:"ttl"`
	// SnoozeFor is how long a snooze silences the page.
	SnoozeFor time.Duration `yaml:"snooze_for"`
}

// DefaultConfig is no links; when set up, links work 30 days and a
// snooze lasts 24 h.
func DefaultConfig() Config {
	return Config{TTL: 30 * 24 * time.Hour, SnoozeFor: 24 * time.Hour}
}

// Enabled reports whether mails carry links.
func (c Config) Enabled() bool { return c.BaseURL != "" && c.Secret.IsSet() }

// Validate reports every problem, naming its key under prefix.
func (c Config) Validate(prefix string) error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(prefix+"."+format, args...)) }
	if err := c.Secret.Err(); err != nil {
		add("secret: %v", err)
	}
	switch {
	case c.BaseURL == "" && c.Secret.IsSet():
		add("base_url: must be set with secret")
	case c.BaseURL != "" && !c.Secret.IsSet() && c.Secret.Err() == nil:
		add("secret: must be set with base_url")
	case c.Secret.IsSet() && len(c.Secret.Reveal()) < 32:
		add("secret: at least 32 bytes, got %d", len(c.Secret.Reveal()))
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			add("base_url: want an absolute http(s) URL without query or fragment, got %q", c.BaseURL)
		}
	}
	if c.TTL < time.Hour {
		add("ttl: must be at least 1h, got %s", c.TTL)
	}
	if c.SnoozeFor <= 0 || c.SnoozeFor > 30*24*time.Hour {
		add("snooze_for: must be positive and at most 720h, got %s", c.SnoozeFor)
	}
	return errors.Join(errs...)
}

// Link actions: the last element of a link's path.
const (
	ActionUnsubscribe = "unsubscribe"
	ActionSnooze      = "snooze"
)

// Prefix is where API serves: Prefix + action + "?t=" + token.
const Prefix = "/links/"

// RecipientLinks are one recipient's links in one mail; a field is empty
// when there is no such link.
type RecipientLinks struct {
	Unsubscribe string // the unsubscribe page, also the List-Unsubscribe URL
	Snooze      string
	SnoozeFor   time.Duration // how long the snooze lasts
}

// Claims are what a token says.
type Claims struct {
	Action    string `json:"a"`
	Recipient string `json:"r"`
	Rule      string `json:"u"`
	Site      string `json:"s,omitempty"` // snooze only
	Path      string `json:"p,omitempty"` // snooze only
	Expires   int64  `json:"e"`           // Unix seconds
}

// Token errors.
var (
	ErrTokenInvalid = errors.New("the link is not valid")
	ErrTokenExpired = errors.New("the link has expired")
)

// maxSnoozePath bounds the paths a snooze link is made for: the URL must
// stay short enough for mail clients.
const maxSnoozePath = 512

// Signer makes and checks links.
type Signer struct {
	cfg Config
	key []byte
}

// NewSigner returns nil when cfg has no links.
func NewSigner(cfg Config) *Signer {
	if !cfg.Enabled() {
		return nil
	}
	return &Signer{cfg: cfg, key: []byte(cfg.Secret.Reveal())}
}

func (s *Signer) mac(payload string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("pagewatch-link-v1."))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

var tokenEncoding = base64.RawURLEncoding.Strict()

// tokenChars reports whether s is of base64url's alphabet alone: the
// decoder skips CR and LF even when strict, and each %0A put into a link
// was another spelling of it (another snooze, another rate bucket).
func tokenChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Sign makes c's token.
func (s *Signer) Sign(c Claims) string {
	body, _ := json.Marshal(c)
	payload := base64.RawURLEncoding.EncodeToString(body)
	return payload + "." + base64.RawURLEncoding.EncodeToString(s.mac(payload))
}

// Verify checks a token for action at now and returns its claims.
func (s *Signer) Verify(token, action string, now time.Time) (Claims, error) {
	payload, sig, ok := strings.Cut(token, ".")
	if !ok || len(token) > 4096 || !tokenChars(payload) || !tokenChars(sig) {
		return Claims{}, ErrTokenInvalid
	}
	// Strict: the last character's unused bits must be 0, so a token
	// has one spelling; four spellings of one signature were four
	// snoozes of one link (snoozeID reads the token as written).
	got, err := tokenEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(payload)) {
		return Claims{}, ErrTokenInvalid
	}
	body, err := tokenEncoding.DecodeString(payload)
	if err != nil {
		return Claims{}, ErrTokenInvalid
	}
	var c Claims
	if err := json.Unmarshal(body, &c); err != nil || c.Action != action || c.Recipient == "" || c.Rule == "" {
		return Claims{}, ErrTokenInvalid
	}
	if c.Action == ActionSnooze && (c.Site == "" || c.Path == "") {
		return Claims{}, ErrTokenInvalid
	}
	if !now.Before(time.Unix(c.Expires, 0)) {
		return c, ErrTokenExpired
	}
	return c, nil
}

// URL is the link for c.
func (s *Signer) URL(c Claims) string {
	return strings.TrimRight(s.cfg.BaseURL, "/") + Prefix + c.Action + "?t=" + s.Sign(c)
}

// For makes each recipient's links for a mail about x, sent at now. A
// digest (many pages) gets no snooze link, nor does a path too long for
// one or one a silence cannot name.
func (s *Signer) For(x crossing.Crossing, recipients []string, now time.Time) map[string]RecipientLinks {
	if s == nil || x.Rule == "" {
		return nil
	}
	exp := now.Add(s.cfg.TTL).Unix()
	snooze := x.Digest == nil && x.Site != "" && strings.HasPrefix(x.Path, "/") && len(x.Path) <= maxSnoozePath
	out := make(map[string]RecipientLinks, len(recipients))
	for _, r := range recipients {
		l := RecipientLinks{Unsubscribe: s.URL(Claims{Action: ActionUnsubscribe, Recipient: r, Rule: x.Rule, Expires: exp})}
		if snooze {
			l.Snooze = s.URL(Claims{Action: ActionSnooze, Recipient: r, Rule: x.Rule, Site: x.Site, Path: x.Path, Expires: exp})
			l.SnoozeFor = s.cfg.SnoozeFor
		}
		out[r] = l
	}
	return out
}

// SnoozeFor is how long a snooze lasts.
func (s *Signer) SnoozeFor() time.Duration { return s.cfg.SnoozeFor }

// PageGlob is a silence page glob matching path alone: its *, ? and \
// escaped. (Turned into ?, as they once were, the page "/*******" a
// visitor made up gave a snooze of every page of 7 characters.)
func PageGlob(path string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`).Replace(path)
}
