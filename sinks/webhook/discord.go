package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/pipeline/notify"
)

// DiscordConfig is a discord receiver's `discord:` block: a channel
// webhook.
type DiscordConfig struct {
	URL secret.Value `yaml:"url"` // https://discord.com/api/webhooks/<id>/<token>: a secret
	// Username overrides the webhook's default name; empty keeps it.
	Username string        `yaml:"username"`
	Timeout  time.Duration `yaml:"timeout"`
	Attempts int           `yaml:"attempts"`
}

// Validate reports every problem, naming the key.
func (c DiscordConfig) Validate(key string) error {
	errs := []error{urlSecret(key+".url", c.URL), HTTP{c.Timeout, c.Attempts}.validate(key)}
	if len([]rune(c.Username)) > 80 {
		errs = append(errs, errors.New(key+".username: at most 80 characters"))
	}
	return errors.Join(errs...)
}

// Discord's published limits on an embed.
const (
	discordMaxTitle       = 256
	discordMaxDescription = 4096
	discordMaxFields      = 25
	discordMaxFieldName   = 256
	discordMaxFieldValue  = 1024
	discordMaxFooter      = 2048
	discordMaxEmbedTotal  = 6000
)

// Discord posts an embed to a Discord webhook.
type Discord struct {
	url, username string
	post          *poster
}

// defaultLimit: Discord takes five requests per two seconds per webhook
// and thirty a minute per channel: thirty a minute, bursts of five.
func (DiscordConfig) defaultLimit() ratelimit.Limit {
	return ratelimit.Limit{Rate: 30, Per: time.Minute, Burst: 5}
}

func (c DiscordConfig) receiver(name string) (notify.Receiver, error) {
	return asReceiver(NewDiscord(name, c))
}

// NewDiscord makes the discord receiver called name.
func NewDiscord(name string, cfg DiscordConfig) (*Discord, error) {
	if err := cfg.Validate("discord"); err != nil {
		return nil, err
	}
	return &Discord{url: cfg.URL.Reveal(), username: cfg.Username, post: newPoster("discord receiver "+name, HTTP{cfg.Timeout, cfg.Attempts})}, nil
}

// discordEscape escapes Discord's Markdown, so strangers' text stays text.
func discordEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "~", `\~`, "`", "\\`", "|", `\|`, ">", `\>`, "#", `\#`, "[", `\[`, "]", `\]`).Replace(s)
}

// discordPayload is the webhook body: one embed, and no mentions
// whatever the text says.
type discordPayload struct {
	AllowedMentions discordMentions `json:"allowed_mentions"`
	Embeds          []discordEmbed  `json:"embeds"`
	Username        string          `json:"username,omitempty"` // empty: the webhook's own name
}

type discordMentions struct {
	Parse []string `json:"parse"` // empty: no mention is ever parsed
}

type discordEmbed struct {
	Color       int            `json:"color"`
	Description string         `json:"description"`
	Fields      []discordField `json:"fields"`
	Footer      discordFooter  `json:"footer"`
	Timestamp   string         `json:"timestamp"`
	Title       string         `json:"title"`
}

type discordField struct {
	Inline bool   `json:"inline"`
	Name   string `json:"name"`
	Value  string `json:"value"`
}

type discordFooter struct {
	Text string `json:"text"`
}

// discordMessage is the webhook body for n.
func discordMessage(n notify.Notification, username string) discordPayload {
	m := newMessage(n)
	var desc []string
	for _, l := range m.intro {
		desc = append(desc, discordEscape(l))
	}
	for _, l := range m.digest {
		desc = append(desc, discordEscape(l))
	}
	embed := discordEmbed{
		Title:       truncate(discordEscape(m.title), discordMaxTitle),
		Description: truncate(strings.Join(desc, "\n"), min(discordMaxDescription, discordMaxEmbedTotal/2)),
		Color:       0xE8590C,
		Timestamp:   m.at.Format(time.RFC3339),
		Footer:      discordFooter{Text: truncate(m.footer, min(discordMaxFooter, 300))},
	}
	for _, f := range m.facts[:min(len(m.facts), discordMaxFields)] {
		embed.Fields = append(embed.Fields, discordField{Name: f.name, Value: truncate(discordEscape(f.value), min(discordMaxFieldValue, 250)), Inline: true})
	}
	return discordPayload{Embeds: []discordEmbed{embed}, AllowedMentions: discordMentions{Parse: []string{}}, Username: username}
}

// Send posts n; Discord answers 204 (or 200 with ?wait=true). A 429
// says how long to wait in its JSON body (retry_after, in seconds).
func (d *Discord) Send(ctx context.Context, n notify.Notification) error {
	body, err := json.Marshal(discordMessage(n, d.username))
	if err != nil {
		return notify.Permanent(err)
	}
	return d.post.post(ctx, jsonRequest(d.url, body, nil), checkDiscord)
}

func checkDiscord(status int, header http.Header, body []byte) answer {
	a := checkStatus(status, header, body)
	if status == http.StatusTooManyRequests {
		var rl struct {
			RetryAfter float64 `json:"retry_after"`
		}
		if json.Unmarshal(body, &rl) == nil && rl.RetryAfter > 0 {
			// Given to the millisecond, rounded either way: a wait of
			// exactly it could come back up to half a millisecond early
			// and be limited again. One more millisecond is enough.
			a.retryAfter = clampWait(time.Duration(rl.RetryAfter*float64(time.Second)) + time.Millisecond)
		}
	}
	return a
}
