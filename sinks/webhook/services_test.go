package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/sinks/webhook"
)

const hookSecret = "0123456789abcdef-webhook"

func note(i int) notify.Notification {
	return notify.Notification{Key: fmt.Sprintf("rule.%024x.%d", i, i), Rule: "rule", Site: "example.com", Path: fmt.Sprintf("/page/%d", i),
		Count: 1234, Threshold: 1000, Window: "1h", CrossedAt: time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC),
		Recipients: []string{"ops@example.com"}, Labels: map[string]string{"team": "web"}}
}

// hostile is written by strangers: markup, mentions, control characters
// and far too much of it.
func hostile() notify.Notification {
	n := note(99)
	n.Path = "/<!channel> @everyone <b>x</b> *bold* [click](http://evil.example) \x1b[31m" + strings.Repeat("é", 9000)
	n.Site = "<@U123>&amp;"
	n.Body = strings.Repeat("line with <i> and </pre>\n", 40)
	return n
}

func digest() notify.Notification {
	n := note(7)
	n.Path = "/blog/*"
	n.DigestTotal = 1500
	for i := 0; i < 1000; i++ {
		n.Digest = append(n.Digest, notify.DigestItem{Path: fmt.Sprintf("/blog/%d-%s", i, strings.Repeat("x", 100)), Count: uint64(5000 - i), Threshold: 1000})
	}
	return n
}

// receivers makes one receiver of each kind against its loopback fake.
type service struct {
	name string
	fake *fake
	recv notify.Receiver
}

func services(t *testing.T) []service {
	slack, teams, discord, tg, hook := fakeSlack(t), fakeTeams(t), fakeDiscord(t), fakeTelegram(t), fakeHook(t, hookSecret)
	s, err := webhook.NewSlack("s", webhook.SlackConfig{URL: secret.New(slack.srv.URL + "/services/T000/B000/XXXX")})
	must(t, err)
	m, err := webhook.NewMSTeams("m", webhook.MSTeamsConfig{URL: secret.New(teams.srv.URL + "/workflows/x/triggers/manual/paths/invoke?sig=s3cr3t")})
	must(t, err)
	d, err := webhook.NewDiscord("d", webhook.DiscordConfig{URL: secret.New(discord.srv.URL + "/api/webhooks/123/tok"), Username: "pagewatch"})
	must(t, err)
	g, err := webhook.NewTelegram("g", webhook.TelegramConfig{Token: secret.New("123:ABC"), ChatID: "-1001234", APIURL: tg.srv.URL})
	must(t, err)
	h, err := webhook.New("h", webhook.Config{URL: secret.New(hook.srv.URL + "/hook"), Secret: secret.New(hookSecret)})
	must(t, err)
	return []service{{"slack", slack, s}, {"msteams", teams, m}, {"discord", discord, d}, {"telegram", tg, g}, {"webhook", hook, h}}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Each service accepts a plain notification, a digest of 1,000 pages and
// a stranger's worst, within its documented limits; strangers' markup
// arrives escaped.
func TestEachServiceAcceptsOurPayloads(t *testing.T) {
	for _, s := range services(t) {
		t.Run(s.name, func(t *testing.T) {
			for _, n := range []notify.Notification{note(1), digest(), hostile()} {
				if err := s.recv.Send(context.Background(), n); err != nil {
					t.Fatalf("%s: %v (service said %q)", n.Key, err, s.fake.takeRefusals())
				}
			}
			accepted, _, early, bodies := s.fake.stats()
			if accepted != 3 || early != 0 {
				t.Errorf("%d accepted, %d before a 429's wait was over", accepted, early)
			}
			raw := string(bodies[2])
			if s.name == "webhook" {
				// Data, not markup: the consumer gets the path as it was.
				var p webhook.Payload
				if err := decode(bodies[2], &p); err != nil || p.Crossing.Path != hostile().Path {
					t.Errorf("the webhook's path is not the crossing's (%v)", err)
				}
				return
			}
			for _, bad := range []string{"<!channel>", "<@U123>", "<b>x</b>", "\x1b", `\u001b`} {
				if strings.Contains(raw, bad) {
					t.Errorf("the hostile text reached %s unescaped: %q", s.name, bad)
				}
			}
		})
	}
}

// Over its limit each service answers 429 in its own way; the receiver
// waits what it was told, and nothing is lost.
func Test429IsHonoured(t *testing.T) {
	for _, s := range services(t) {
		if s.fake.limitN == 0 {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			n := s.fake.limitN + 2
			for i := 0; i < n; i++ {
				if err := s.recv.Send(context.Background(), note(i)); err != nil {
					t.Fatalf("send %d: %v", i, err)
				}
			}
			accepted, throttled, early, _ := s.fake.stats()
			if accepted != n || throttled == 0 || early != 0 {
				t.Errorf("%d accepted of %d, %d throttled, %d came before the wait the 429 asked for", accepted, n, throttled, early)
			}
		})
	}
}

func TestRetriesOnlyWhatCanSucceed(t *testing.T) {
	cases := []struct {
		name      string
		behave    func(w http.ResponseWriter, n int) bool
		permanent bool
		requests  int
	}{
		{"5xx then ok", func(w http.ResponseWriter, n int) bool {
			if n <= 2 {
				w.WriteHeader(503)
				return true
			}
			return false
		}, false, 3},
		{"time-out then ok", func(w http.ResponseWriter, n int) bool {
			if n == 1 {
				time.Sleep(300 * time.Millisecond)
			}
			return false
		}, false, 2},
		{"400 is not retried", func(w http.ResponseWriter, n int) bool { w.WriteHeader(400); return true }, true, 1},
		{"410 is not retried", func(w http.ResponseWriter, n int) bool { w.WriteHeader(410); return true }, true, 1},
		{"always 500", func(w http.ResponseWriter, n int) bool { w.WriteHeader(500); return true }, false, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := fakeHook(t, hookSecret)
			f.behave = c.behave
			h, err := webhook.New("h", webhook.Config{URL: secret.New(f.srv.URL), Secret: secret.New(hookSecret), Timeout: 200 * time.Millisecond})
			must(t, err)
			err = h.Send(context.Background(), note(1))
			var p interface{ Permanent() bool }
			if got := errors.As(err, &p) && p.Permanent(); got != c.permanent {
				t.Errorf("permanent %v, want %v (err %v)", got, c.permanent, err)
			}
			if (err == nil) != (c.name == "5xx then ok" || c.name == "time-out then ok") {
				t.Errorf("err %v", err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.requests != c.requests {
				t.Errorf("%d requests, want %d", f.requests, c.requests)
			}
		})
	}
}

// A Retry-After too long to sleep through goes back to the worker, which
// puts the job back for that long.
func TestLongRetryAfterGoesBackToTheQueue(t *testing.T) {
	f := fakeHook(t, hookSecret)
	f.behave = func(w http.ResponseWriter, n int) bool {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(429)
		return true
	}
	h, err := webhook.New("h", webhook.Config{URL: secret.New(f.srv.URL), Secret: secret.New(hookSecret)})
	must(t, err)
	err = h.Send(context.Background(), note(1))
	var ra interface{ RetryAfter() time.Duration }
	if !errors.As(err, &ra) || ra.RetryAfter() != 2*time.Minute {
		t.Fatalf("err %v, want one asking for 2m", err)
	}
	if strings.Contains(err.Error(), f.srv.URL) {
		t.Errorf("the error shows the URL: %v", err)
	}
}
