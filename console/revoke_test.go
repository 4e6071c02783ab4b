package console

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
)

func connect(t *testing.T, ns *natstest.Server) *bus.Bus {
	t.Helper()
	cfg := bus.DefaultConfig()
	cfg.URL = ns.URL
	b, err := bus.Connect(context.Background(), cfg, t.Name(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// The revocations in NATS: a logout on one console holds on another that
// shares the session key, entries lapse after the session's lifetime,
// and with NATS gone a session is refused rather than trusted.
func TestRevocationsInNATS(t *testing.T) {
	ctx := context.Background()
	ns := natstest.Start(t)
	key := "0123456789abcdef0123456789abcdef"
	// Two consoles, each with its own connection, as two replicas.
	one := setup(t, func(c *Config) { c.SessionKey = secretOf(key) },
		func(d *Deps) { d.Revocations = NewRevocations(connect(t, ns), time.Hour) })
	two := setup(t, func(c *Config) {
		c.SessionKey = secretOf(key)
		c.Users = one.s.cfg.Load().Users // the same hashes (setup salts anew)
	}, func(d *Deps) { d.Revocations = NewRevocations(connect(t, ns), time.Hour) })

	cookies := cookiesOf(t, one)
	copied := sessionOf(t, cookies)
	if st, _ := status(t, two.srv.URL+"/history", copied); st != http.StatusOK {
		t.Fatalf("the session on the other console: %d", st)
	}
	resp, page := send(t, http.MethodGet, one.srv.URL+"/history", "", cookies, nil)
	cookies = append(cookies, resp.Cookies()...)
	resp, _ = send(t, http.MethodPost, one.srv.URL+"/logout", "", cookies, strings.NewReader(url.Values{"csrf": {csrfOf(t, page)}}.Encode()))
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Fatalf("logout: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, b := range []*bundle{one, two} {
		if st, loc := status(t, b.srv.URL+"/history", copied); st != http.StatusSeeOther || loc != "/login" {
			t.Errorf("the copied cookie after logout: %d to %q, want 303 to /login", st, loc)
		}
	}

	// An entry lapses once the session it revokes would have.
	short := NewRevocations(connect(t, ns), time.Second)
	if err := short.Revoke(ctx, "lapses", time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if ok, err := short.Revoked(ctx, "lapses"); err != nil || !ok {
		t.Fatalf("just revoked: %v %v", ok, err)
	}
	testcheck.Eventually(t, 15*time.Second, "the revocation lapses", func() error {
		if ok, err := short.Revoked(ctx, "lapses"); err != nil || ok {
			return fmt.Errorf("still revoked: %v %v", ok, err)
		}
		return nil
	})

	// NATS down: a live session is refused (503), never waved through.
	live := sessionOf(t, cookiesOf(t, two))
	ns.Stop()
	resp, body := send(t, http.MethodGet, two.srv.URL+"/history", "", []*http.Cookie{live}, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "NATS") {
		t.Errorf("a session with NATS down: %d\n%s", resp.StatusCode, body)
	}
}
