package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/broker/ratelimit"
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

// defaultLimit: Teams takes four requests a second per webhook.
func (MSTeamsConfig) defaultLimit() ratelimit.Limit {
	return ratelimit.Limit{Rate: 4, Per: time.Second, Burst: 4}
}

func (c MSTeamsConfig) receiver(name string) (notify.Receiver, error) {
	return asReceiver(NewMSTeams(name, c))
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

// teamsPayload is a workflow's body: a message with one Adaptive Card
// attachment (version 1.4).
type teamsPayload struct {
	Attachments []teamsAttachment `json:"attachments"`
	Type        string            `json:"type"` // message
}

type teamsAttachment struct {
	Content     teamsCard `json:"content"`
	ContentType string    `json:"contentType"`
	ContentURL  *string   `json:"contentUrl"` // null, as Microsoft's examples send it
}

type teamsCard struct {
	Schema  string `json:"$schema"`
	Body    []any  `json:"body"` // teamsText and teamsFacts
	Type    string `json:"type"`
	Version string `json:"version"`
}

// teamsText is a TextBlock. Text is never left out: an empty line of a
// rule's body is an empty block.
type teamsText struct {
	FontType string `json:"fontType,omitempty"`
	IsSubtle bool   `json:"isSubtle,omitempty"`
	Size     string `json:"size,omitempty"`
	Spacing  string `json:"spacing,omitempty"`
	Text     string `json:"text"`
	Type     string `json:"type"`
	Weight   string `json:"weight,omitempty"`
	Wrap     bool   `json:"wrap"`
}

type teamsFacts struct {
	Facts []teamsFact `json:"facts"`
	Type  string      `json:"type"` // FactSet
}

type teamsFact struct {
	Title string `json:"title"`
	Value string `json:"value"`
}

// teamsMessage is the workflow payload for n.
func teamsMessage(n notify.Notification) teamsPayload {
	m := newMessage(n)
	block := func(text string) teamsText { return teamsText{Type: "TextBlock", Text: text, Wrap: true} }
	title := block(teamsEscape(m.title))
	title.Size, title.Weight = "Large", "Bolder"
	body := []any{title}
	for _, l := range m.intro {
		body = append(body, block(teamsEscape(l)))
	}
	var facts []teamsFact
	for _, f := range m.facts {
		facts = append(facts, teamsFact{Title: f.name, Value: teamsEscape(f.value)})
	}
	body = append(body, teamsFacts{Type: "FactSet", Facts: facts})
	for _, l := range m.digest {
		b := block(teamsEscape(l))
		b.FontType, b.Spacing = "Monospace", "None"
		body = append(body, b)
	}
	if m.more > 0 {
		body = append(body, block(fmt.Sprintf("…and %d more", m.more)))
	}
	footer := block(teamsEscape(m.footer))
	footer.IsSubtle, footer.Size = true, "Small"
	body = append(body, footer)
	return teamsPayload{
		Type: "message",
		Attachments: []teamsAttachment{{
			ContentType: "application/vnd.microsoft.card.adaptive",
			Content: teamsCard{
				Schema:  "http://adaptivecards.io/schemas/adaptive-card.json",
				Type:    "AdaptiveCard",
				Version: "1.4",
				Body:    body,
			},
		}},
	}
}

// Send posts n; the workflow answers 202 Accepted.
func (t *MSTeams) Send(ctx context.Context, n notify.Notification) error {
	body, err := json.Marshal(teamsMessage(n))
	if err != nil {
		return notify.Permanent(err)
	}
	if len(body) > TeamsMaxBytes {
		// Only a digest gets this long: drop its list rather than fail.
		n.Digest = nil
		if body, err = json.Marshal(teamsMessage(n)); err != nil {
			return notify.Permanent(err)
		}
	}
	return t.post.post(ctx, jsonRequest(t.url, body, nil), checkStatus)
}
