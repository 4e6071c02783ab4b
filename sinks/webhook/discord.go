package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

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

// DiscordPayload is the webhook body for n: one embed, and no mentions
// whatever the text says.
func DiscordPayload(n notify.Notification, username string) map[string]any {
	m := newMessage(n)
	var desc []string
	for _, l := range m.intro {
		desc = append(desc, discordEscape(l))
	}
	for _, l := range m.digest {
		desc = append(desc, discordEscape(l))
	}
	embed := map[string]any{
		"title":       truncate(discordEscape(m.title), discordMaxTitle),
		"description": truncate(strings.Join(desc, "\n"), min(discordMaxDescription, discordMaxEmbedTotal/2)),
		"color":       0xE8590C,
		"timestamp":   m.at.Format(time.RFC3339),
		"footer":      map[string]any{"text": truncate(m.footer, min(discordMaxFooter, 300))},
	}
	var fields []map[string]any
	for _, f := range m.facts[:min(len(m.facts), discordMaxFields)] {
		fields = append(fields, map[string]any{"name": f.name, "value": truncate(discordEscape(f.value), min(discordMaxFieldValue, 250)), "inline": true})
	}
	embed["fields"] = fields
	p := map[string]any{"embeds": []any{embed}, "allowed_mentions": map[string]any{"parse": []string{}}}
	if username != "" {
		p["username"] = username
	}
	return p
}

// Send posts n; Discord answers 204 (or 200 with ?wait=true). A 429
// says how long to wait in its JSON body (retry_after, in seconds).
func (d *Discord) Send(ctx context.Context, n notify.Notification) error {
	body, err := json.Marshal(DiscordPayload(n, d.username))
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
			a.retryAfter = clampWait(time.Duration(rl.RetryAfter * float64(time.Second)))
		}
	}
	return a
}
