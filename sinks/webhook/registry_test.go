package webhook_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/sinks/webhook"
)

// Each kind has one name and a default limit that is a real limit; a
// type of no kind (email) keeps the limit of a service that publishes
// none.
func TestKindsTable(t *testing.T) {
	seen := map[string]bool{}
	var names []string
	for _, k := range webhook.Kinds() {
		if k.Name == "" || seen[k.Name] {
			t.Errorf("kind %q is empty or twice", k.Name)
		}
		seen[k.Name] = true
		names = append(names, k.Name)
		if err := k.DefaultLimit.Validate(k.Name); err != nil || k.DefaultLimit.Off() {
			t.Errorf("%s: default limit %s: %v", k.Name, k.DefaultLimit, err)
		}
		if got, ok := webhook.LookupKind(k.Name); !ok || got.Name != k.Name || webhook.DefaultLimit(k.Name) != k.DefaultLimit {
			t.Errorf("%s: looked up as %+v", k.Name, got)
		}
	}
	// Our own webhook first: config lists the types in this order.
	if len(names) < 2 || names[0] != "webhook" {
		t.Errorf("kinds %q", names)
	}
	if _, ok := webhook.LookupKind("email"); ok {
		t.Error("email is a kind of sinks/webhook")
	}
	if l := webhook.DefaultLimit("email"); l != (ratelimit.Limit{Rate: 10, Per: time.Second, Burst: 10}) {
		t.Errorf("email's limit %s", l)
	}
}

func TestBlocksValidateNamesTheKey(t *testing.T) {
	b := webhook.Blocks{Slack: &webhook.SlackConfig{URL: secret.New("https://hooks.slack.com/services/T/B/x")}}
	err := fmt.Sprint(webhook.ValidateBlocks(b, "discord", "receivers[3]"))
	for _, want := range []string{"receivers[3].slack: given for a receiver of type discord", "receivers[3].discord: must be given for a receiver of type discord"} {
		if !strings.Contains(err, want) {
			t.Errorf("got %s, want %q", err, want)
		}
	}
	if err := webhook.ValidateBlocks(b, "slack", "receivers[3]"); err != nil {
		t.Errorf("a valid slack block: %v", err)
	}
	b.Slack.URL = secret.New("ftp://x")
	if err := fmt.Sprint(webhook.ValidateBlocks(b, "slack", "receivers[3]")); !strings.Contains(err, "receivers[3].slack.url: must be an http(s) URL") {
		t.Errorf("got %s", err)
	}
	if err := webhook.ValidateBlocks(webhook.Blocks{}, "email", "receivers[0]"); err != nil {
		t.Errorf("email without blocks: %v", err)
	}
}

func TestBlocksMakeTheReceiverOfTheirType(t *testing.T) {
	b := webhook.Blocks{Telegram: &webhook.TelegramConfig{Token: secret.New("123:ABC"), ChatID: "-1001234"}}
	r, err := webhook.NewReceiver(b, "telegram", "oncall")
	if _, ok := r.(*webhook.Telegram); !ok || err != nil {
		t.Errorf("got %T, %v", r, err)
	}
	for _, typ := range []string{"slack", "pigeon"} {
		if r, err := webhook.NewReceiver(b, typ, "x"); r != nil || err == nil {
			t.Errorf("%s: got %v, %v", typ, r, err)
		}
	}
	b.Telegram.ChatID = ""
	if r, err := webhook.NewReceiver(b, "telegram", "oncall"); r != nil || err == nil || !strings.Contains(err.Error(), "telegram.chat_id") {
		t.Errorf("an invalid block made %v, %v", r, err)
	}
}
