package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/pipeline/notify"
)

// NtfyConfig is an ntfy receiver's `ntfy:` block: a topic on an ntfy
// server (ntfy.sh, or one's own), which pushes to the phones and
// browsers subscribed to it.
type NtfyConfig struct {
	// URL is the server; default https://ntfy.sh.
	URL string `yaml:"url"`
	// Topic is published to. On a server where anyone may read any
	// topic (ntfy.sh) its name is all that keeps the messages private:
	// a secret.
	Topic secret.Value `yaml:"topic"`
	// Token is an access token (tk_...) for a server or topic that
	// requires one: a secret. Empty: none.
	Token secret.Value `yaml:"token"`
	// Priority is the messages' priority: min, low, default, high, max
	// (urgent), or 1 to 5. Empty: the server's default (3).
	Priority string `yaml:"priority"`
	// Click, when set, is opened when a notification is tapped (the
	// console, say). It is never a page's own URL: sites and paths come
	// from access logs.
	Click    string        `yaml:"click"`
	Timeout  time.Duration `yaml:"timeout"`
	Attempts int           `yaml:"attempts"`
}

// DefaultNtfyURL is ntfy's public server.
const DefaultNtfyURL = "https://ntfy.sh"

// ntfyTopic is the topic names ntfy accepts.
var ntfyTopic = regexp.MustCompile(`^[-_A-Za-z0-9]{1,64}$`)

// ntfyPriorities are the names ntfy gives its priorities.
var ntfyPriorities = map[string]int{"min": 1, "low": 2, "default": 3, "high": 4, "max": 5, "urgent": 5}

// NtfyMaxBody bounds a publish request: ntfy's default message limit is
// 4,096 bytes, and older servers read no more of a JSON body than that,
// so the whole body keeps within it, not just its message.
const NtfyMaxBody = 4096

// Validate reports every problem, naming the key. Neither the topic nor
// the token is ever shown.
func (c NtfyConfig) Validate(key string) error {
	var errs []error
	if c.URL != "" {
		errs = append(errs, checkURL(key+".url", c.URL))
	}
	if err := c.Topic.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s.topic: %w", key, err))
	} else if !ntfyTopic.MatchString(c.Topic.Reveal()) {
		errs = append(errs, fmt.Errorf("%s.topic: must be 1 to 64 letters, digits, - or _", key))
	}
	if err := c.Token.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s.token: %w", key, err))
	} else if !headerToken(c.Token.Reveal()) {
		errs = append(errs, fmt.Errorf("%s.token: must be printable ASCII without spaces (an access token, tk_...)", key))
	}
	if _, err := ntfyPriority(c.Priority); err != nil {
		errs = append(errs, fmt.Errorf("%s.priority: %w", key, err))
	}
	if c.Click != "" {
		errs = append(errs, checkURL(key+".click", c.Click))
	}
	errs = append(errs, HTTP{c.Timeout, c.Attempts}.validate(key))
	return errors.Join(errs...)
}

// headerToken reports whether s may go in an Authorization header as it
// is: visible ASCII only, so no line break can end the header early.
func headerToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// ntfyPriority reads a priority; 0 leaves it to the server.
func ntfyPriority(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	if p, ok := ntfyPriorities[strings.ToLower(s)]; ok {
		return p, nil
	}
	if p, err := strconv.Atoi(s); err == nil && p >= 1 && p <= 5 {
		return p, nil
	}
	return 0, fmt.Errorf("must be min, low, default, high, max or 1 to 5, got %q", s)
}

// defaultLimit: ntfy's limit per client address, which ntfy.sh applies
// to publishers without an account, is a bucket of 60 requests refilled
// one every 5 s. One message every 5 s keeps up with the refill; bursts
// of 10 leave most of the bucket to retries and anything else sharing
// the address.
func (NtfyConfig) defaultLimit() ratelimit.Limit {
	return ratelimit.Limit{Rate: 12, Per: time.Minute, Burst: 10}
}

func (c NtfyConfig) receiver(name string) (notify.Receiver, error) {
	return asReceiver(NewNtfy(name, c))
}

// Ntfy publishes to an ntfy topic, in ntfy's JSON form: every string a
// stranger wrote travels in the JSON body, none in a header, so no path
// or referrer can add a header or break one, and UTF-8 needs no
// encoding.
type Ntfy struct {
	endpoint, topic, token, click string
	priority                      int
	post                          *poster
}

// NewNtfy makes the ntfy receiver called name.
func NewNtfy(name string, cfg NtfyConfig) (*Ntfy, error) {
	if err := cfg.Validate("ntfy"); err != nil {
		return nil, err
	}
	server := cfg.URL
	if server == "" {
		server = DefaultNtfyURL
	}
	prio, _ := ntfyPriority(cfg.Priority)
	// The JSON form is posted to the server's root, the topic in the body.
	return &Ntfy{endpoint: strings.TrimRight(server, "/") + "/", topic: cfg.Topic.Reveal(), token: cfg.Token.Reveal(),
		click: cfg.Click, priority: prio, post: newPoster("ntfy receiver "+name, HTTP{cfg.Timeout, cfg.Attempts})}, nil
}

// ntfyPayload is a publish request in ntfy's JSON form.
type ntfyPayload struct {
	Topic    string   `json:"topic"`
	Title    string   `json:"title"`
	Message  string   `json:"message"`
	Tags     []string `json:"tags,omitempty"`
	Priority int      `json:"priority,omitempty"`
	Click    string   `json:"click,omitempty"`
}

// publishBody is the publish request for n.
func (t *Ntfy) publishBody(n notify.Notification) ([]byte, error) {
	m := newMessage(n)
	return fitNtfy(ntfyPayload{Topic: t.topic, Title: m.title, Message: ntfyText(m), Tags: ntfyTags(n), Priority: t.priority, Click: t.click})
}

// ntfyText is the message as plain lines: a push notification shows no
// markup, so nothing needs escaping.
func ntfyText(m message) string {
	var b strings.Builder
	for _, l := range m.intro {
		b.WriteString(l + "\n")
	}
	b.WriteString("\n")
	for _, f := range m.facts {
		b.WriteString(f.name + ": " + f.value + "\n")
	}
	if len(m.digest) > 0 {
		b.WriteString("\n")
		for _, l := range m.digest {
			b.WriteString(l + "\n")
		}
		if m.more > 0 {
			fmt.Fprintf(&b, "…and %d more\n", m.more)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// fitNtfy encodes p, its message cut to keep the body within
// NtfyMaxBody.
func fitNtfy(p ntfyPayload) ([]byte, error) {
	body, err := encodeJSON(p)
	if err != nil || len(body) <= NtfyMaxBody {
		return body, err
	}
	text := p.Message
	p.Message = ""
	bare, err := encodeJSON(p)
	if err != nil {
		return nil, err
	}
	room := NtfyMaxBody - len(bare) - len("…")
	if room <= 0 {
		return nil, fmt.Errorf("ntfy message: %d bytes without its text, over ntfy's %d", len(bare), NtfyMaxBody)
	}
	// Escapes make the text longer in JSON: keep the share of it that
	// fits, and less while it still does not (escapes are uneven).
	keep := len(text) * room / (len(body) - len(bare))
	for {
		p.Message = cutBytes(text, keep) + "…"
		if body, err = encodeJSON(p); err != nil || len(body) <= NtfyMaxBody {
			return body, err
		}
		keep -= max((len(body)-NtfyMaxBody)/2, 1)
	}
}

// ntfyTags are emoji shortcodes ntfy shows before the title.
func ntfyTags(n notify.Notification) []string {
	switch {
	case n.Event == string(rules.EventResolve):
		return []string{"white_check_mark"}
	case n.Why != nil && n.Why.Direction == "down":
		return []string{"chart_with_downwards_trend"}
	default:
		return []string{"chart_with_upwards_trend"}
	}
}

// encodeJSON is json.Marshal without escaping <, > and & as \u003c...:
// the body is no HTML, and paths full of them would grow six-fold.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// cutBytes cuts s to at most n bytes, at a rune's boundary.
func cutBytes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Send publishes n; ntfy answers 200 with the message it stored.
func (t *Ntfy) Send(ctx context.Context, n notify.Notification) error {
	body, err := t.publishBody(n)
	if err != nil {
		return notify.Permanent(err)
	}
	var h http.Header
	if t.token != "" {
		h = http.Header{"Authorization": {"Bearer " + t.token}}
	}
	return t.post.post(ctx, jsonRequest(t.endpoint, body, h), checkNtfy)
}

// ntfyRefill is how often ntfy's request bucket gains a request.
const ntfyRefill = 5 * time.Second

// checkNtfy reads ntfy's answer: errors are JSON ({"code": 42901,
// "http": 429, "error": "limit reached: too many requests"}), and a 429
// says no Retry-After, so it waits for the bucket to refill rather than
// the second a bare 429 gets.
func checkNtfy(status int, header http.Header, body []byte) answer {
	a := checkStatus(status, header, body)
	if status == http.StatusTooManyRequests && header.Get("Retry-After") == "" {
		a.retryAfter = ntfyRefill
	}
	return a
}
