package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/config/strict"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/sinks/webhook"
)

const (
	ntfyTopic = "pw-alerts_0123456789"
	ntfyToken = "tk_AgQdq7mVBoFD37zQVN29RhuMzNIz2"
)

var ntfyTopicRE = regexp.MustCompile(`^[-_A-Za-z0-9]{1,64}$`)

// fakeNtfy is an ntfy server taking the JSON form: POST to the root, a
// body of at most 4,096 bytes (older servers read no further),
// the documented fields only, an access token when token is set, and
// its request bucket (when limitN is set) answered with ntfy's 429: a
// JSON error and no Retry-After.
func fakeNtfy(t *testing.T, token string) *fake {
	reply := func(w http.ResponseWriter, status, code int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"code":%d,"http":%d,"error":%q}`, code, status, msg)
	}
	f := &fake{okStatus: 200, okBody: `{"id":"hwQ2YpKdmg","event":"message","topic":"` + ntfyTopic + `"}`,
		tooMany: func(w http.ResponseWriter, wait time.Duration) {
			reply(w, http.StatusTooManyRequests, 42901, "limit reached: too many requests")
		}}
	f.check = func(r *http.Request, body []byte) (int, string) {
		if r.URL.Path != "/" {
			return 404, `{"code":40401,"http":404,"error":"page not found"}`
		}
		if got := r.Header.Get("Authorization"); got != "" && got != "Bearer "+token || got == "" && token != "" {
			return 403, `{"code":40301,"http":403,"error":"forbidden"}`
		}
		// Nothing a stranger wrote may ride in a header.
		for k, vs := range r.Header {
			for _, v := range vs {
				if strings.ContainsAny(v, "<>@\r\n") || !isASCII(v) {
					return 400, "test: header " + k + " carries " + v
				}
			}
		}
		if len(body) > webhook.NtfyMaxBody {
			return 413, `{"code":41303,"http":413,"error":"JSON body too large"}`
		}
		var m struct {
			Topic    string   `json:"topic"`
			Message  string   `json:"message"`
			Title    string   `json:"title"`
			Tags     []string `json:"tags"`
			Priority int      `json:"priority"`
			Click    string   `json:"click"`
			Actions  []any    `json:"actions"`
			Attach   string   `json:"attach"`
			Markdown bool     `json:"markdown"`
			Icon     string   `json:"icon"`
			Filename string   `json:"filename"`
			Delay    string   `json:"delay"`
			Email    string   `json:"email"`
			Call     string   `json:"call"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields() // a misspelt field would be dropped silently
		if !utf8.Valid(body) || dec.Decode(&m) != nil {
			return 400, `{"code":40017,"http":400,"error":"invalid request: request body must be message JSON"}`
		}
		if !ntfyTopicRE.MatchString(m.Topic) || m.Topic != ntfyTopic {
			return 400, `{"code":40009,"http":400,"error":"invalid topic"}`
		}
		if m.Priority < 0 || m.Priority > 5 {
			return 400, `{"code":40007,"http":400,"error":"invalid priority"}`
		}
		for _, tag := range m.Tags {
			if tag == "" || strings.Contains(tag, ",") { // ntfy joins tags with commas
				return 400, "test: bad tag " + tag
			}
		}
		if m.Click != "" {
			if u, err := url.Parse(m.Click); err != nil || u.Scheme != "https" {
				return 400, `{"code":40013,"http":400,"error":"invalid click URL"}`
			}
		}
		if m.Message == "" || strings.ContainsAny(m.Title, "\r\n") {
			return 400, "test: empty message or a title of several lines"
		}
		return 0, ""
	}
	return f.start(t)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func newNtfy(t *testing.T, f *fake, cfg webhook.NtfyConfig) *webhook.Ntfy {
	t.Helper()
	cfg.URL = f.srv.URL
	cfg.Topic = secret.New(ntfyTopic)
	n, err := webhook.NewNtfy("n", cfg)
	must(t, err)
	return n
}

type ntfyBody struct {
	Topic, Title, Message, Click string
	Tags                         []string
	Priority                     int
}

// ntfy takes a plain notification, a digest of 1,000 pages and a
// stranger's worst, each within its body limit; strangers' text arrives
// as data in the body, never in a header.
func TestNtfyAcceptsOurPayloads(t *testing.T) {
	f := fakeNtfy(t, ntfyToken)
	n := newNtfy(t, f, webhook.NtfyConfig{Token: secret.New(ntfyToken), Priority: "high", Click: "https://pagewatch.example.com/"})
	long := note(4)
	long.Body = strings.Repeat(strings.Repeat(`"\`, 240)+"é\n", 20) // each byte an escape in JSON
	notes := []notify.Notification{note(1), digest(), hostile(), long}
	for _, x := range notes {
		if err := n.Send(context.Background(), x); err != nil {
			t.Fatalf("%s: %v (ntfy said %q)", x.Key, err, f.takeRefusals())
		}
	}
	accepted, _, _, bodies := f.stats()
	if accepted != len(notes) {
		t.Fatalf("%d accepted of %d", accepted, len(notes))
	}
	var plain, dig, worst ntfyBody
	must(t, decode(bodies[0], &plain))
	must(t, decode(bodies[1], &dig))
	must(t, decode(bodies[2], &worst))
	if plain.Title != webhook.ChatTitle(note(1)) || plain.Priority != 4 || plain.Click != "https://pagewatch.example.com/" ||
		len(plain.Tags) != 1 || plain.Tags[0] != "chart_with_upwards_trend" {
		t.Errorf("plain: %+v", plain)
	}
	for _, want := range []string{"/page/1 on example.com passed 1,000 views in 1h.", "Site: example.com", "Views: 1,234", "Rule: rule"} {
		if !strings.Contains(plain.Message, want) {
			t.Errorf("the message lacks %q:\n%s", want, plain.Message)
		}
	}
	if !strings.Contains(dig.Message, "5,000  /blog/0-") || !strings.HasSuffix(dig.Message, "…") && !strings.Contains(dig.Message, "more") {
		t.Errorf("the digest's message:\n%s", dig.Message)
	}
	var cut ntfyBody
	must(t, decode(bodies[3], &cut))
	if !strings.HasSuffix(cut.Message, "…") || len(bodies[3]) < webhook.NtfyMaxBody-8 {
		t.Errorf("a message too long for ntfy is not cut to fit (%d bytes): ...%q", len(bodies[3]), cut.Message[max(0, len(cut.Message)-20):])
	}
	if !strings.Contains(worst.Title, "<!channel> @everyone") || strings.Contains(worst.Title+worst.Message, "\x1b") {
		t.Errorf("the stranger's path is not kept as cleaned text: %q", worst.Title)
	}
}

func TestNtfyTagsSayWhatHappened(t *testing.T) {
	f := fakeNtfy(t, "")
	n := newNtfy(t, f, webhook.NtfyConfig{})
	down, resolve := note(2), note(3)
	down.Why = &crossing.Why{Kind: "unusual", Direction: "down"}
	resolve.Event = "resolve"
	for _, x := range []notify.Notification{down, resolve} {
		must(t, n.Send(context.Background(), x))
	}
	_, _, _, bodies := f.stats()
	var got []string
	for _, b := range bodies {
		var p ntfyBody
		must(t, decode(b, &p))
		got = append(got, strings.Join(p.Tags, ","))
		if p.Priority != 0 || p.Click != "" {
			t.Errorf("priority %d and click %q without config", p.Priority, p.Click)
		}
	}
	if strings.Join(got, " ") != "chart_with_downwards_trend white_check_mark" {
		t.Errorf("tags %q", got)
	}
}

// A wrong token is a 403: never retried.
func TestNtfyWrongTokenIsPermanent(t *testing.T) {
	f := fakeNtfy(t, ntfyToken)
	n := newNtfy(t, f, webhook.NtfyConfig{Token: secret.New("tk_wrong")})
	err := n.Send(context.Background(), note(1))
	var p interface{ Permanent() bool }
	if !errors.As(err, &p) || !p.Permanent() || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("err %v, want a permanent 403", err)
	}
	f.takeRefusals()
	if strings.Contains(err.Error(), "tk_wrong") {
		t.Errorf("the error shows the token: %v", err)
	}
}

// ntfy's 429 says no Retry-After: the send waits the bucket's refill,
// not the second a bare 429 gets, and comes no earlier than that.
func TestNtfy429WaitsForTheRefill(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 5 s")
	}
	f := fakeNtfy(t, "")
	f.limitN, f.limitPer = 1, 4*time.Second
	n := newNtfy(t, f, webhook.NtfyConfig{})
	start := time.Now()
	for i := 0; i < 2; i++ {
		if err := n.Send(context.Background(), note(i)); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	accepted, throttled, early, _ := f.stats()
	if accepted != 2 || throttled != 1 || early != 0 || time.Since(start) < 5*time.Second {
		t.Errorf("%d accepted, %d throttled, %d early, after %s", accepted, throttled, early, time.Since(start))
	}
}

// The default limit keeps within the bucket ntfy.sh gives a publisher
// without an account: 60 requests, one more every 5 s.
func TestNtfyDefaultLimitIsWithinNtfyShs(t *testing.T) {
	l := webhook.DefaultLimit("ntfy")
	if err := l.Validate("ntfy"); err != nil || l.Off() {
		t.Fatalf("limit %s: %v", l, err)
	}
	if interval := l.Per / time.Duration(l.Rate); interval < 5*time.Second || l.Burst > 60 {
		t.Errorf("limit %s: one every %s, bursts of %d; ntfy.sh refills one every 5s, bursts of 60", l, interval, l.Burst)
	}
}

func TestNtfyConfigErrorsNameTheKeyNotTheSecrets(t *testing.T) {
	cases := []struct {
		cfg  webhook.NtfyConfig
		want string
	}{
		{webhook.NtfyConfig{}, "ntfy.topic: must be 1 to 64 letters"},
		{webhook.NtfyConfig{Topic: secret.New("a/b?c")}, "ntfy.topic: must be"},
		{webhook.NtfyConfig{Topic: secret.New(strings.Repeat("x", 65))}, "ntfy.topic: must be"},
		{webhook.NtfyConfig{Topic: secret.New("ok"), URL: "ftp://ntfy.example.com"}, "ntfy.url: must be an http(s) URL"},
		{webhook.NtfyConfig{Topic: secret.New("ok"), Token: secret.New("tk_x\r\nX-Evil: 1")}, "ntfy.token: must be printable ASCII"},
		{webhook.NtfyConfig{Topic: secret.New("ok"), Token: secret.New("tk_é")}, "ntfy.token: must be printable ASCII"},
		{webhook.NtfyConfig{Topic: secret.New("ok"), Priority: "6"}, `ntfy.priority: must be min, low, default, high, max or 1 to 5, got "6"`},
		{webhook.NtfyConfig{Topic: secret.New("ok"), Priority: "loud"}, "ntfy.priority: must be"},
		{webhook.NtfyConfig{Topic: secret.New("ok"), Click: "javascript:alert(1)"}, "ntfy.click: must be an http(s) URL"},
		{webhook.NtfyConfig{Topic: secret.New("ok"), Attempts: 11}, "ntfy.attempts: must be 0"},
	}
	for _, c := range cases {
		err := c.cfg.Validate("ntfy")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.cfg, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "a/b?c") || strings.Contains(err.Error(), "tk_x") || strings.Contains(err.Error(), "tk_é") {
			t.Errorf("the error shows a secret: %v", err)
		}
	}
	for _, p := range []string{"", "min", "Default", "urgent", "1", "5"} {
		if err := (webhook.NtfyConfig{Topic: secret.New("ok"), Priority: p}).Validate("ntfy"); err != nil {
			t.Errorf("priority %q: %v", p, err)
		}
	}
}

// A self-hosted server may sit under a path: the JSON form goes to that
// path's root.
func TestNtfyUnderAPath(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Path
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	t.Cleanup(srv.Close)
	n, err := webhook.NewNtfy("n", webhook.NtfyConfig{URL: srv.URL + "/ntfy", Topic: secret.New(ntfyTopic)})
	must(t, err)
	must(t, n.Send(context.Background(), note(1)))
	if got != "/ntfy/" {
		t.Errorf("posted to %q, want /ntfy/", got)
	}
}

// The block decodes as the config file writes it: secrets from the
// environment, a priority as a number or a name; an unknown key is an
// error naming it.
func TestNtfyBlockDecodes(t *testing.T) {
	t.Setenv("PW_TEST_NTFY_TOPIC", ntfyTopic)
	decodeBlock := func(src string) (webhook.NtfyConfig, error) {
		var n yaml.Node
		must(t, yaml.Unmarshal([]byte(src), &n))
		var c webhook.NtfyConfig
		return c, strict.Decode(&n, &c, "receivers[0].ntfy")
	}
	c, err := decodeBlock(`{url: "https://ntfy.example.com", topic: {env: PW_TEST_NTFY_TOPIC}, token: tk_abc, priority: 4, click: "https://pw.example.com/"}`)
	must(t, err)
	must(t, c.Validate("receivers[0].ntfy"))
	if c.Topic.Reveal() != ntfyTopic || c.Token.Reveal() != "tk_abc" || c.Priority != "4" || c.URL != "https://ntfy.example.com" {
		t.Errorf("decoded %+v", c)
	}
	if out, err := yaml.Marshal(c); err != nil || strings.Contains(string(out), ntfyTopic) || strings.Contains(string(out), "tk_abc") {
		t.Errorf("a secret is printed (%v):\n%s", err, out)
	}
	if _, err := decodeBlock(`{topic: x, sever: "https://ntfy.example.com"}`); err == nil || !strings.Contains(err.Error(), "receivers[0].ntfy.sever (line 1): unknown key") {
		t.Errorf("got %v", err)
	}
}
