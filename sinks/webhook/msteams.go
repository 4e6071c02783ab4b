package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/pipeline/notify"
)

// MSTeamsConfig is an msteams receiver's `msteams:` block: the URL of a
// Teams workflow ("Post to a channel when a webhook request is
// received"), which takes an Adaptive Card.
type MSTeamsConfig struct {
	URL      secret.Value  `yaml:"url"` // a secret: it carries the workflow's signature
	Timeout  time.Duration `yaml:"timeout"`
	Attempts int           `yaml:"attempts"`
}

// Validate reports every problem, naming the key.
func (c MSTeamsConfig) Validate(key string) error {
	return errors.Join(urlSecret(key+".url", c.URL), HTTP{c.Timeout, c.Attempts}.validate(key))
}

// TeamsMaxBytes is Teams' published limit on a message: about 28 KB.
const TeamsMaxBytes = 28 << 10

// MSTeams posts Adaptive Cards to a Teams workflow webhook.
type MSTeams struct {
	url  string
	post *poster
}

// NewMSTeams makes the msteams receiver called name.
func NewMSTeams(name string, cfg MSTeamsConfig) (*MSTeams, error) {
	if err := cfg.Validate("msteams"); err != nil {
		return nil, err
	}
	return &MSTeams{url: cfg.URL.Reveal(), post: newPoster("msteams receiver "+name, HTTP{cfg.Timeout, cfg.Attempts})}, nil
}

// teamsEscape escapes the Markdown Adaptive Cards read in text, so a
// stranger's path cannot become a link or emphasis.
func teamsEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "(", `\(`, ")", `\)`, "<", `\<`, ">", `\>`, "#", `\#`, "`", "\\`").Replace(s)
}

// TeamsCard is the workflow payload for n: a message with one Adaptive
// Card attachment (version 1.4).
func TeamsCard(n notify.Notification) map[string]any {
	m := newMessage(n)
	block := func(text string, extra map[string]any) map[string]any {
		b := map[string]any{"type": "TextBlock", "text": text, "wrap": true}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	body := []map[string]any{block(teamsEscape(m.title), map[string]any{"size": "Large", "weight": "Bolder"})}
	for _, l := range m.intro {
		body = append(body, block(teamsEscape(l), nil))
	}
	var facts []map[string]any
	for _, f := range m.facts {
		facts = append(facts, map[string]any{"title": f.name, "value": teamsEscape(f.value)})
	}
	body = append(body, map[string]any{"type": "FactSet", "facts": facts})
	for _, l := range m.digest {
		body = append(body, block(teamsEscape(l), map[string]any{"fontType": "Monospace", "spacing": "None"}))
	}
	if m.more > 0 {
		body = append(body, block(fmt.Sprintf("…and %d more", m.more), nil))
	}
	body = append(body, block(teamsEscape(m.footer), map[string]any{"isSubtle": true, "size": "Small"}))
	return map[string]any{
		"type": "message",
		"attachments": []map[string]any{{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"contentUrl":  nil,
			"content": map[string]any{
				"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
				"type":    "AdaptiveCard",
				"version": "1.4",
				"body":    body,
			},
		}},
	}
}

// Send posts n; the workflow answers 202 Accepted.
func (t *MSTeams) Send(ctx context.Context, n notify.Notification) error {
	body, err := json.Marshal(TeamsCard(n))
	if err != nil {
		return notify.Permanent(err)
	}
	if len(body) > TeamsMaxBytes {
		// Only a digest gets this long: drop its list rather than fail.
		n.Digest = nil
		if body, err = json.Marshal(TeamsCard(n)); err != nil {
			return notify.Permanent(err)
		}
	}
	return t.post.post(ctx, jsonRequest(t.url, body, nil), checkStatus)
}
