package config_test

import (
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/config"
)

func TestReceiversDecodeWithSecretsAndDefaults(t *testing.T) {
	t.Setenv("PW_TEST_SLACK", "https://hooks.slack.com/services/T/B/X")
	cfg, err := parse(t, `
receivers:
  - {name: email, type: email}
  - name: team-slack
    type: slack
    slack: {url: {env: PW_TEST_SLACK}}
    quiet_hours: {start: "22:00", end: "07:00", time_zone: Europe/Berlin}
  - name: hooks
    type: webhook
    webhook: {url: "https://hooks.example.com/pw", secret: "0123456789abcdef"}
    rate_limit: {rate: 2, per: 1s, burst: 2}
worker:
  routing:
    receivers: [email]
    routes:
      - match: {site: shop.example.com}
        receivers: [team-slack, hooks]
`)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(config.Worker); err != nil {
		t.Fatal(err)
	}
	if got := cfg.Receivers[1].Slack.URL.Reveal(); got != "https://hooks.slack.com/services/T/B/X" {
		t.Errorf("slack url %q", got)
	}
	if l := cfg.Receivers[1].Limit(); l.Rate != 1 || l.Per.Seconds() != 1 {
		t.Errorf("slack's default limit %s, want Slack's one a second", l)
	}
	if l := cfg.Receivers[2].Limit(); l.Rate != 2 {
		t.Errorf("hooks' limit %s", l)
	}
	out, err := cfg.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "hooks.slack.com") || strings.Contains(string(out), "0123456789abcdef") {
		t.Errorf("a receiver's secret is printed:\n%s", out)
	}
}

func TestReceiverErrorsNameTheKey(t *testing.T) {
	cfg, err := parse(t, `
receivers:
  - {name: email, type: email, rate_limit: {rate: 1, per: 1s, burst: 1}}
  - {name: Bad Name, type: slack}
  - {name: hook, type: webhook, webhook: {url: "ftp://x", secret: short}}
  - {name: tg, type: telegram, slack: {url: "https://x.example"}}
  - {name: q, type: discord, discord: {url: "https://discord.com/api/webhooks/1/t"}, quiet_hours: {start: "25:00", end: "07:00", time_zone: Mars/Olympus}}
  - {name: email, type: pigeon}
worker:
  routing:
    receivers: [email, nobody]
`)
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate(config.Worker)
	for _, want := range []string{
		"receivers[0].rate_limit: email receivers use worker.rate_limit",
		`receivers[1].name: must match`,
		"receivers[1].slack: must be given for a receiver of type slack",
		"receivers[2].webhook.url: must be an http(s) URL",
		"receivers[2].webhook.secret: must be at least 16 bytes",
		"receivers[3].slack: given for a receiver of type telegram",
		"receivers[3].telegram: must be given",
		`receivers[4].quiet_hours.start: want HH:MM`,
		`receivers[4].quiet_hours.time_zone: unknown time zone "Mars/Olympus"`,
		`receivers[5].type: must be email, webhook`,
		`receivers[5].name: "email" is given twice`,
		`worker.routing.receivers: no receiver named "nobody"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error containing %q; got:\n%v", want, err)
		}
	}
}

func TestRuleReceiversMustExist(t *testing.T) {
	cfg, err := parse(t, `
receivers:
  - {name: email, type: email}
  - {name: ops-slack, type: slack, slack: {url: "https://hooks.slack.com/services/T/B/x"}}
sweeper:
  rules:
    - {name: a, site: example.com, path: /, threshold: 1, window: 1h, notify: {receivers: [ops-slack]}}
    - {name: b, site: example.com, path: /, threshold: 1, window: 1h, notify: {receivers: [ops-slack, pager], recipients: [a@example.com]}}
`)
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate(config.Sweeper)
	want := `sweeper.rules[1].notify.receivers[1]: no receiver named "pager" in receivers`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "rules[0]") {
		t.Fatalf("want only %q; got:\n%v", want, err)
	}
}
