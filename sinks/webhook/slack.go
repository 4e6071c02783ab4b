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

// SlackConfig is a slack receiver's `slack:` block: an incoming webhook.
type SlackConfig struct {
	URL      secret.Value  `yaml:"url"` // https://hooks.slack.com/services/...: a secret
	Timeout  time.Duration `yaml:"timeout"`
	Attempts int           `yaml:"attempts"`
}

// Validate reports every problem, naming the key.
func (c SlackConfig) Validate(key string) error {
	return errors.Join(urlSecret(key+".url", c.URL), HTTP{c.Timeout, c.Attempts}.validate(key))
}

func urlSecret(key string, v secret.Value) error {
	if err := v.Err(); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return checkURL(key, v.Reveal())
}

// Slack's published limits on what a message may hold (Block Kit).
const (
	slackMaxBlocks      = 50
	slackMaxHeader      = 150
	slackMaxSectionText = 3000
	slackMaxFields      = 10
	slackMaxFieldText   = 2000
)

// Slack posts to a Slack incoming webhook, as Block Kit blocks with a
// text fallback for notifications.
type Slack struct {
	url  string
	post *poster
}

// defaultLimit: Slack takes one message a second per incoming webhook.
func (SlackConfig) defaultLimit() ratelimit.Limit {
	return ratelimit.Limit{Rate: 1, Per: time.Second, Burst: 1}
}

func (c SlackConfig) receiver(name string) (notify.Receiver, error) {
	return asReceiver(NewSlack(name, c))
}

// NewSlack makes the slack receiver called name.
func NewSlack(name string, cfg SlackConfig) (*Slack, error) {
	if err := cfg.Validate("slack"); err != nil {
		return nil, err
	}
	return &Slack{url: cfg.URL.Reveal(), post: newPoster("slack receiver "+name, HTTP{cfg.Timeout, cfg.Attempts})}, nil
}

// slackEscape escapes the three characters Slack's mrkdwn requires, which
// also defuses <!channel> and <@user> mentions in strangers' text.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// slackPayload is an incoming webhook's body: Block Kit blocks, and the
// text notifications show.
type slackPayload struct {
	Blocks []slackBlock `json:"blocks"`
	Text   string       `json:"text"`
}

// slackBlock is a header (text), a section (text or fields) or a
// context (elements).
type slackBlock struct {
	Elements []slackText `json:"elements,omitempty"`
	Fields   []slackText `json:"fields,omitempty"`
	Text     *slackText  `json:"text,omitempty"`
	Type     string      `json:"type"`
}

type slackText struct {
	Text string `json:"text"`
	Type string `json:"type"` // mrkdwn or plain_text
}

// slackMessage is the payload for n.
func slackMessage(n notify.Notification) slackPayload {
	m := newMessage(n)
	mrkdwn := func(t string) slackText { return slackText{Type: "mrkdwn", Text: t} }
	section := func(t string) slackBlock { s := mrkdwn(t); return slackBlock{Type: "section", Text: &s} }
	blocks := []slackBlock{
		{Type: "header", Text: &slackText{Type: "plain_text", Text: truncate(m.title, slackMaxHeader)}},
	}
	var intro []string
	for _, l := range m.intro {
		intro = append(intro, slackEscape(l))
	}
	blocks = append(blocks, section(truncate(strings.Join(intro, "\n"), slackMaxSectionText)))
	var fields []slackText
	for _, f := range m.facts[:min(len(m.facts), slackMaxFields)] {
		fields = append(fields, mrkdwn(truncate("*"+f.name+"*\n"+slackEscape(f.value), slackMaxFieldText)))
	}
	blocks = append(blocks, slackBlock{Type: "section", Fields: fields})
	if len(m.digest) > 0 {
		var d []string
		for _, l := range m.digest {
			d = append(d, slackEscape(l))
		}
		if m.more > 0 {
			d = append(d, fmt.Sprintf("…and %d more", m.more))
		}
		blocks = append(blocks, section(truncate("```"+strings.Join(d, "\n")+"```", slackMaxSectionText)))
	}
	blocks = append(blocks, slackBlock{Type: "context", Elements: []slackText{mrkdwn(slackEscape(m.footer))}})
	return slackPayload{Text: slackEscape(m.title), Blocks: blocks}
}

// Send posts n. Slack answers 200 "ok"; its errors come as 4xx with a
// short reason (invalid_blocks, channel_not_found, ...), never retried.
func (s *Slack) Send(ctx context.Context, n notify.Notification) error {
	body, err := json.Marshal(slackMessage(n))
	if err != nil {
		return notify.Permanent(err)
	}
	return s.post.post(ctx, jsonRequest(s.url, body, nil), checkStatus)
}
