package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/pipeline/notify"
)

// TelegramConfig is a telegram receiver's `telegram:` block: a bot's
// token and the chat it writes to.
type TelegramConfig struct {
	Token secret.Value `yaml:"token"` // from @BotFather: a secret
	// ChatID is the chat: a number (-100… for channels and supergroups)
	// or @channelname.
	ChatID string `yaml:"chat_id"`
	// APIURL is the Bot API's address; default https://api.telegram.org.
	APIURL   string        `yaml:"api_url"`
	Timeout  time.Duration `yaml:"timeout"`
	Attempts int           `yaml:"attempts"`
}

// DefaultTelegramAPI is the Bot API's address.
const DefaultTelegramAPI = "https://api.telegram.org"

// TelegramMaxText is the Bot API's limit on a message's text.
const TelegramMaxText = 4096

// Validate reports every problem, naming the key.
func (c TelegramConfig) Validate(key string) error {
	var errs []error
	if err := c.Token.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s.token: %w", key, err))
	} else if tok := c.Token.Reveal(); tok == "" || strings.ContainsAny(tok, "/?# ") {
		errs = append(errs, fmt.Errorf("%s.token: must be set, a bot token (digits:letters)", key))
	}
	if c.ChatID == "" {
		errs = append(errs, fmt.Errorf("%s.chat_id: must be set", key))
	}
	if c.APIURL != "" {
		errs = append(errs, checkURL(key+".api_url", c.APIURL))
	}
	errs = append(errs, HTTP{c.Timeout, c.Attempts}.validate(key))
	return errors.Join(errs...)
}

// Telegram sends messages through the Telegram Bot API (sendMessage).
type Telegram struct {
	endpoint, chatID string
	post             *poster
}

// defaultLimit: the Bot API takes a message a second per chat and
// twenty a minute per group: twenty a minute, no bursts.
func (TelegramConfig) defaultLimit() ratelimit.Limit {
	return ratelimit.Limit{Rate: 20, Per: time.Minute, Burst: 1}
}

func (c TelegramConfig) receiver(name string) (notify.Receiver, error) {
	return asReceiver(NewTelegram(name, c))
}

// NewTelegram makes the telegram receiver called name.
func NewTelegram(name string, cfg TelegramConfig) (*Telegram, error) {
	if err := cfg.Validate("telegram"); err != nil {
		return nil, err
	}
	api := cfg.APIURL
	if api == "" {
		api = DefaultTelegramAPI
	}
	return &Telegram{endpoint: strings.TrimRight(api, "/") + "/bot" + cfg.Token.Reveal() + "/sendMessage", chatID: cfg.ChatID,
		post: newPoster("telegram receiver "+name, HTTP{cfg.Timeout, cfg.Attempts})}, nil
}

// telegramPayload is a sendMessage body.
type telegramPayload struct {
	ChatID             string          `json:"chat_id"`
	LinkPreviewOptions telegramPreview `json:"link_preview_options"`
	ParseMode          string          `json:"parse_mode,omitempty"` // empty: plain text
	Text               string          `json:"text"`
}

// telegramPreview is off: a stranger's path is no link to preview.
type telegramPreview struct {
	IsDisabled bool `json:"is_disabled"`
}

// telegramMessage is the sendMessage body for n, in parse_mode HTML.
func telegramMessage(chatID string, n notify.Notification) telegramPayload {
	m := newMessage(n)
	var b strings.Builder
	b.WriteString("<b>" + html.EscapeString(m.title) + "</b>\n\n")
	for _, l := range m.intro {
		b.WriteString(html.EscapeString(l) + "\n")
	}
	b.WriteString("\n")
	for _, f := range m.facts {
		b.WriteString("<b>" + f.name + ":</b> " + html.EscapeString(f.value) + "\n")
	}
	if len(m.digest) > 0 {
		b.WriteString("\n<pre>")
		for _, l := range m.digest {
			b.WriteString(html.EscapeString(l) + "\n")
		}
		b.WriteString("</pre>")
		if m.more > 0 {
			fmt.Fprintf(&b, "…and %d more\n", m.more)
		}
	}
	b.WriteString("\n<i>" + html.EscapeString(m.footer) + "</i>")
	text := b.String()
	if len([]rune(text)) > TelegramMaxText {
		// Markup cut in half would be refused: fall back to plain text.
		return telegramPayload{ChatID: chatID, Text: truncate(m.plain(), TelegramMaxText), LinkPreviewOptions: telegramPreview{IsDisabled: true}}
	}
	return telegramPayload{ChatID: chatID, Text: text, ParseMode: "HTML", LinkPreviewOptions: telegramPreview{IsDisabled: true}}
}

// Send calls sendMessage. The Bot API answers {"ok": true, ...}, or
// {"ok": false, "error_code": ..., "description": ...}, with
// parameters.retry_after on a 429.
func (t *Telegram) Send(ctx context.Context, n notify.Notification) error {
	body, err := json.Marshal(telegramMessage(t.chatID, n))
	if err != nil {
		return notify.Permanent(err)
	}
	return t.post.post(ctx, jsonRequest(t.endpoint, body, nil), checkTelegram)
}

func checkTelegram(status int, header http.Header, body []byte) answer {
	var r struct {
		OK          bool   `json:"ok"`
		ErrorCode   int    `json:"error_code"`
		Description string `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	decoded := json.Unmarshal(body, &r) == nil
	if status == http.StatusOK && decoded && r.OK {
		return answer{ok: true}
	}
	if status == http.StatusOK {
		return answer{err: fmt.Errorf("HTTP 200 without \"ok\": true")}
	}
	a := checkStatus(status, header, nil)
	if decoded && r.Description != "" {
		a.err = fmt.Errorf("HTTP %d: %s", status, clean(r.Description, 200))
	}
	if status == http.StatusTooManyRequests && r.Parameters.RetryAfter > 0 {
		a.retryAfter = clampWait(time.Duration(r.Parameters.RetryAfter) * time.Second)
	}
	return a
}
