package webhook_test

// Loopback stand-ins for the services, each checking what that service
// documents: the payload's shape and limits, the token or signature, and
// the rate limit (answered with the service's own 429).

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pagewatch/pagewatch/sinks/webhook"
)

// fake is one service on loopback.
type fake struct {
	srv *httptest.Server
	// check validates a request; "" accepts it. It runs under mu.
	check func(r *http.Request, body []byte) (status int, reply string)
	// limit: at most limitN requests in any limitPer, else a 429 (the
	// service's own form, from tooMany).
	limitN   int
	limitPer time.Duration
	tooMany  func(w http.ResponseWriter, wait time.Duration)
	okStatus int
	okBody   string

	// behave, when set, answers before anything else (outages, delays).
	behave func(w http.ResponseWriter, n int) bool

	mu        sync.Mutex
	times     []time.Time // accepted requests
	refusals  []string    // why requests were refused (4xx other than 429)
	throttled int         // 429s given
	bodies    [][]byte    // accepted bodies
	requests  int
	notBefore time.Time // the end of the last 429's wait
	early     int       // requests that came before the wait a 429 asked for
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if f.behave != nil && f.behave(w, f.requests) {
		return
	}
	if now.Before(f.notBefore) {
		f.early++
	}
	if r.Method != http.MethodPost {
		f.refuse(w, http.StatusMethodNotAllowed, "method "+r.Method)
		return
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		f.refuse(w, http.StatusUnsupportedMediaType, "content type "+r.Header.Get("Content-Type"))
		return
	}
	if status, reply := f.check(r, body); status != 0 {
		f.refuse(w, status, reply)
		return
	}
	if f.limitN > 0 {
		// Arrival times jitter: a sender spacing requests by exactly
		// the limit may arrive a little early.
		const jitter = 100 * time.Millisecond
		in := 0
		for _, t := range f.times {
			if now.Sub(t) < f.limitPer-jitter {
				in++
			}
		}
		if in >= f.limitN {
			wait := f.limitPer - jitter - now.Sub(f.times[len(f.times)-f.limitN])
			f.throttled++
			f.notBefore = now.Add(wait)
			f.tooMany(w, wait)
			return
		}
	}
	f.times = append(f.times, now)
	f.bodies = append(f.bodies, body)
	w.WriteHeader(f.okStatus)
	_, _ = io.WriteString(w, f.okBody)
}

func (f *fake) refuse(w http.ResponseWriter, status int, why string) {
	f.refusals = append(f.refusals, why)
	w.WriteHeader(status)
	_, _ = io.WriteString(w, why)
}

func (f *fake) start(t *testing.T) *fake {
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.refusals) > 0 && !t.Failed() {
			t.Errorf("the service refused requests: %q", f.refusals)
		}
	})
	return f
}

func (f *fake) stats() (accepted, throttled, early int, bodies [][]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.times), f.throttled, f.early, append([][]byte(nil), f.bodies...)
}

func (f *fake) takeRefusals() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.refusals
	f.refusals = nil
	return r
}

func decode(body []byte, v any) error {
	if !utf8.Valid(body) {
		return fmt.Errorf("body is not UTF-8")
	}
	return json.Unmarshal(body, v)
}

func retryAfterSeconds(wait time.Duration) string {
	return fmt.Sprint(int(wait.Seconds() + 0.999))
}

// fakeSlack is an incoming webhook: Block Kit limits, "ok", and one
// message a second (429 with Retry-After).
func fakeSlack(t *testing.T) *fake {
	f := &fake{okStatus: 200, okBody: "ok", limitN: 1, limitPer: time.Second,
		tooMany: func(w http.ResponseWriter, wait time.Duration) {
			w.Header().Set("Retry-After", retryAfterSeconds(wait))
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, "rate_limited")
		}}
	f.check = func(r *http.Request, body []byte) (int, string) {
		if r.URL.Path != "/services/T000/B000/XXXX" {
			return 404, "no_service"
		}
		var p struct {
			Text   string            `json:"text"`
			Blocks []json.RawMessage `json:"blocks"`
		}
		if err := decode(body, &p); err != nil {
			return 400, "invalid_payload"
		}
		if p.Text == "" && len(p.Blocks) == 0 {
			return 400, "no_text"
		}
		if len(p.Blocks) > 50 {
			return 400, "invalid_blocks: more than 50"
		}
		for _, raw := range p.Blocks {
			if why := slackBlock(raw); why != "" {
				return 400, "invalid_blocks: " + why
			}
		}
		return 0, ""
	}
	return f.start(t)
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func slackBlock(raw json.RawMessage) string {
	var b struct {
		Type     string      `json:"type"`
		Text     *slackText  `json:"text"`
		Fields   []slackText `json:"fields"`
		Elements []slackText `json:"elements"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return err.Error()
	}
	switch b.Type {
	case "header":
		if b.Text == nil || b.Text.Type != "plain_text" || b.Text.Text == "" || utf8.RuneCountInString(b.Text.Text) > 150 {
			return "header needs plain_text of 1..150"
		}
	case "section":
		if b.Text == nil && len(b.Fields) == 0 {
			return "section needs text or fields"
		}
		if b.Text != nil && (b.Text.Text == "" || utf8.RuneCountInString(b.Text.Text) > 3000 || (b.Text.Type != "mrkdwn" && b.Text.Type != "plain_text")) {
			return "section text must be 1..3000"
		}
		if len(b.Fields) > 10 {
			return "more than 10 fields"
		}
		for _, f := range b.Fields {
			if f.Text == "" || utf8.RuneCountInString(f.Text) > 2000 {
				return "field text must be 1..2000"
			}
		}
	case "context":
		if len(b.Elements) == 0 || len(b.Elements) > 10 {
			return "context needs 1..10 elements"
		}
	case "divider":
	default:
		return "unknown block type " + b.Type
	}
	return ""
}

// fakeTeams is a Teams workflow: a message with one Adaptive Card,
// at most 28 KB, four requests a second, 202 Accepted.
func fakeTeams(t *testing.T) *fake {
	f := &fake{okStatus: http.StatusAccepted, limitN: 4, limitPer: time.Second,
		tooMany: func(w http.ResponseWriter, wait time.Duration) {
			w.Header().Set("Retry-After", retryAfterSeconds(wait))
			w.WriteHeader(http.StatusTooManyRequests)
		}}
	f.check = func(r *http.Request, body []byte) (int, string) {
		if r.URL.Query().Get("sig") != "s3cr3t" {
			return 401, "missing or wrong sig"
		}
		if len(body) > webhook.TeamsMaxBytes {
			return 413, "request entity too large"
		}
		var p struct {
			Type        string `json:"type"`
			Attachments []struct {
				ContentType string `json:"contentType"`
				Content     struct {
					Type    string           `json:"type"`
					Version string           `json:"version"`
					Body    []map[string]any `json:"body"`
				} `json:"content"`
			} `json:"attachments"`
		}
		if err := decode(body, &p); err != nil {
			return 400, "bad json"
		}
		if p.Type != "message" || len(p.Attachments) != 1 {
			return 400, "want a message with one attachment"
		}
		a := p.Attachments[0]
		if a.ContentType != "application/vnd.microsoft.card.adaptive" || a.Content.Type != "AdaptiveCard" || a.Content.Version == "" {
			return 400, "the attachment is no Adaptive Card"
		}
		for _, el := range a.Content.Body {
			switch el["type"] {
			case "TextBlock":
				if s, ok := el["text"].(string); !ok || s == "" {
					return 400, "TextBlock without text"
				}
			case "FactSet":
				facts, ok := el["facts"].([]any)
				if !ok || len(facts) == 0 {
					return 400, "FactSet without facts"
				}
			default:
				return 400, fmt.Sprintf("element type %v", el["type"])
			}
		}
		return 0, ""
	}
	return f.start(t)
}

// fakeDiscord is a channel webhook: embed limits, no mentions allowed,
// five requests per two seconds, 429 with retry_after in the JSON body.
func fakeDiscord(t *testing.T) *fake {
	f := &fake{okStatus: http.StatusNoContent, limitN: 5, limitPer: 2 * time.Second,
		tooMany: func(w http.ResponseWriter, wait time.Duration) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", retryAfterSeconds(wait))
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprintf(w, `{"message": "You are being rate limited.", "retry_after": %.3f, "global": false}`, wait.Seconds())
		}}
	f.check = func(r *http.Request, body []byte) (int, string) {
		if r.URL.Path != "/api/webhooks/123/tok" {
			return 404, `{"message": "Unknown Webhook", "code": 10015}`
		}
		var p struct {
			Content string `json:"content"`
			Embeds  []struct {
				Title       string `json:"title"`
				Description string `json:"description"`
				Fields      []struct {
					Name  string `json:"name"`
					Value string `json:"value"`
				} `json:"fields"`
				Footer struct {
					Text string `json:"text"`
				} `json:"footer"`
			} `json:"embeds"`
			AllowedMentions *struct {
				Parse []string `json:"parse"`
			} `json:"allowed_mentions"`
		}
		if err := decode(body, &p); err != nil {
			return 400, `{"message": "Invalid JSON", "code": 50109}`
		}
		if p.Content == "" && len(p.Embeds) == 0 {
			return 400, `{"message": "Cannot send an empty message", "code": 50006}`
		}
		if utf8.RuneCountInString(p.Content) > 2000 || len(p.Embeds) > 10 {
			return 400, "content over 2000 or more than 10 embeds"
		}
		if p.AllowedMentions == nil || len(p.AllowedMentions.Parse) != 0 {
			return 400, "test: mentions must be off"
		}
		for _, e := range p.Embeds {
			total := utf8.RuneCountInString(e.Title) + utf8.RuneCountInString(e.Description) + utf8.RuneCountInString(e.Footer.Text)
			if utf8.RuneCountInString(e.Title) > 256 || utf8.RuneCountInString(e.Description) > 4096 || len(e.Fields) > 25 || utf8.RuneCountInString(e.Footer.Text) > 2048 {
				return 400, "embed over its limits"
			}
			for _, fl := range e.Fields {
				if fl.Name == "" || fl.Value == "" || utf8.RuneCountInString(fl.Name) > 256 || utf8.RuneCountInString(fl.Value) > 1024 {
					return 400, "field over its limits"
				}
				total += utf8.RuneCountInString(fl.Name) + utf8.RuneCountInString(fl.Value)
			}
			if total > 6000 {
				return 400, "embed over 6000 characters"
			}
		}
		return 0, ""
	}
	return f.start(t)
}

var telegramTag = regexp.MustCompile(`</?(b|i|pre|code)>`)

// fakeTelegram is the Bot API's sendMessage: the token in the path, a
// known chat, text of 1..4096 characters in valid HTML of the tags it
// allows, a message a second per chat, errors as {"ok": false, ...}.
func fakeTelegram(t *testing.T) *fake {
	reply := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	f := &fake{okStatus: 200, okBody: `{"ok": true, "result": {"message_id": 1}}`, limitN: 1, limitPer: time.Second,
		tooMany: func(w http.ResponseWriter, wait time.Duration) {
			s := int(wait.Seconds() + 0.999)
			reply(w, 429, map[string]any{"ok": false, "error_code": 429, "description": fmt.Sprintf("Too Many Requests: retry after %d", s),
				"parameters": map[string]any{"retry_after": s}})
		}}
	f.check = func(r *http.Request, body []byte) (int, string) {
		if r.URL.Path != "/bot123:ABC/sendMessage" {
			return 401, `{"ok": false, "error_code": 401, "description": "Unauthorized"}`
		}
		var p struct {
			ChatID    any    `json:"chat_id"`
			Text      string `json:"text"`
			ParseMode string `json:"parse_mode"`
		}
		if err := decode(body, &p); err != nil {
			return 400, `{"ok": false, "error_code": 400, "description": "Bad Request: can't parse JSON"}`
		}
		if fmt.Sprint(p.ChatID) != "-1001234" {
			return 400, `{"ok": false, "error_code": 400, "description": "Bad Request: chat not found"}`
		}
		if n := utf8.RuneCountInString(p.Text); n == 0 || n > 4096 {
			return 400, `{"ok": false, "error_code": 400, "description": "Bad Request: message is too long"}`
		}
		if p.ParseMode == "HTML" {
			if strings.Contains(telegramTag.ReplaceAllString(p.Text, ""), "<") {
				return 400, `{"ok": false, "error_code": 400, "description": "Bad Request: can't parse entities"}`
			}
		}
		return 0, ""
	}
	return f.start(t)
}

// fakeHook is a webhook consumer verifying pagewatch's signature with
// the verifier the docs give, and reading schema v1.
func fakeHook(t *testing.T, secret string) *fake {
	f := &fake{okStatus: 204}
	f.check = func(r *http.Request, body []byte) (int, string) {
		if err := webhook.Verify([]byte(secret), r.Header.Get(webhook.HeaderSignature), body, time.Now(), webhook.DefaultWindow); err != nil {
			return 401, err.Error()
		}
		var p webhook.Payload
		if err := decode(body, &p); err != nil || p.Schema != webhook.Schema || p.ID == "" || p.ID != r.Header.Get(webhook.HeaderID) || p.Crossing.Key == "" {
			return 400, "not a v1 payload"
		}
		return 0, ""
	}
	return f.start(t)
}
