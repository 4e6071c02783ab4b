package console

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// fakeRevocations keeps the logged-out sessions in memory; err, when set,
// is what every call answers (NATS unreachable).
type fakeRevocations struct {
	mu      sync.Mutex
	revoked map[string]time.Time
	err     error
}

func (f *fakeRevocations) Revoke(_ context.Context, id string, expires time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	if f.revoked == nil {
		f.revoked = map[string]time.Time{}
	}
	f.revoked[id] = expires
	return nil
}

func (f *fakeRevocations) Revoked(_ context.Context, id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return false, f.err
	}
	_, ok := f.revoked[id]
	return ok, nil
}

func (f *fakeRevocations) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// sessionOf is the session cookie among cookies.
func sessionOf(t *testing.T, cookies []*http.Cookie) *http.Cookie {
	t.Helper()
	for _, c := range cookies {
		if strings.HasSuffix(c.Name, sessionCookie) && c.MaxAge >= 0 {
			return c
		}
	}
	t.Fatalf("no session cookie in %v", cookies)
	return nil
}

// status is what one GET with the given cookies answers, and where it
// redirects.
func status(t *testing.T, u string, cookies ...*http.Cookie) (int, string) {
	t.Helper()
	resp, _ := send(t, http.MethodGet, u, "", cookies, nil)
	return resp.StatusCode, resp.Header.Get("Location")
}

// A live stream ends once its session is logged out: it outlives the
// check its request began with, so it asks again at each keep-alive.
func TestLiveStreamEndsAtLogout(t *testing.T) {
	defer func(d time.Duration) { streamKeepAlive = d }(streamKeepAlive)
	streamKeepAlive = 200 * time.Millisecond
	b := setup(t, nil)
	cookies := cookiesOf(t, b)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+"/api/v1/live/stream", nil)
	req.AddCookie(sessionOf(t, cookies))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	lines := make(chan string, 100)
	sc := bufio.NewScanner(resp.Body)
	go func() {
		defer close(lines)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// Keep-alives flow while the session holds.
	for alive := 0; alive < 2; {
		if l, ok := <-lines; !ok {
			t.Fatal("the stream ended while its session held")
		} else if l == ": keep-alive" {
			alive++
		}
	}
	resp2, page := send(t, http.MethodGet, b.srv.URL+"/history", "", cookies, nil)
	cookies = append(cookies, resp2.Cookies()...)
	if r, _ := send(t, http.MethodPost, b.srv.URL+"/logout", "", cookies, strings.NewReader(url.Values{"csrf": {csrfOf(t, page)}}.Encode())); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", r.StatusCode)
	}
	ended := false
	for l := range lines {
		ended = ended || l == "event: ended"
	}
	if !ended || ctx.Err() != nil {
		t.Fatalf("after logout: ended event %t, stream closed by the server %t", ended, ctx.Err() == nil)
	}
}

// A copied session cookie is dead once its session logged out, on every
// console sharing the revocations.
func TestLogoutRevokesTheSession(t *testing.T) {
	b := setup(t, nil)
	cookies := cookiesOf(t, b)
	copied := sessionOf(t, cookies)
	if st, _ := status(t, b.srv.URL+"/history", copied); st != http.StatusOK {
		t.Fatalf("history with the session: %d", st)
	}
	// The logout form, from a page of the session.
	resp, page := send(t, http.MethodGet, b.srv.URL+"/history", "", cookies, nil)
	cookies = append(cookies, resp.Cookies()...)
	resp, _ = send(t, http.MethodPost, b.srv.URL+"/logout", "", cookies, strings.NewReader(url.Values{"csrf": {csrfOf(t, page)}}.Encode()))
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Fatalf("logout: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if st, loc := status(t, b.srv.URL+"/history", copied); st != http.StatusSeeOther || loc != "/login" {
		t.Errorf("history with the copied cookie after logout: %d to %q, want 303 to /login", st, loc)
	}
	if st, _ := status(t, b.srv.URL+"/api/v1/whoami", copied); st != http.StatusUnauthorized {
		t.Errorf("API with the copied cookie after logout: %d, want 401", st)
	}
	// Another login of the same user is a session of its own.
	if st, _ := status(t, b.srv.URL+"/history", sessionOf(t, cookiesOf(t, b))); st != http.StatusOK {
		t.Errorf("a new login after the logout: %d", st)
	}
}

// A session is signed with its user's password hash: a new password
// voids every session of the old one, and no other user's.
func TestNewPasswordVoidsSessions(t *testing.T) {
	key := "0123456789abcdef0123456789abcdef"
	before := setup(t, func(c *Config) { c.SessionKey = secretOf(key) })
	alice := sessionOf(t, cookiesOf(t, before))
	bob := sessionOf(t, loginAs(t, before, "bob", "pw-bob"))
	after := setup(t, func(c *Config) {
		c.SessionKey = secretOf(key)
		c.Users[1] = before.s.cfg.Load().Users[1] // bob's hash as it was (setup salts anew)
		h, err := bcrypt.GenerateFromPassword([]byte("new-pw-alice"), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		c.Users[0].PasswordHash = string(h)
	})
	if st, loc := status(t, after.srv.URL+"/history", alice); st != http.StatusSeeOther || loc != "/login" {
		t.Errorf("alice's session after her password changed: %d to %q, want 303 to /login", st, loc)
	}
	if st, _ := status(t, after.srv.URL+"/history", bob); st != http.StatusOK {
		t.Errorf("bob's session after alice's password changed: %d, want 200", st)
	}
}

// With the revocations unreachable a session cannot be told from a
// logged-out one: it is refused (503, saying why), bearer tokens are not.
func TestSessionsFailClosedWithoutRevocations(t *testing.T) {
	b := setup(t, nil)
	cookies := cookiesOf(t, b)
	b.revocations.fail(errors.New("nats: no servers available for connection"))
	resp, body := send(t, http.MethodGet, b.srv.URL+"/history", "", cookies, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "logged out") {
		t.Errorf("history with the revocations down: %d\n%s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/api/v1/history", nil)
	req.Header.Set("Authorization", "Bearer "+b.token)
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusOK {
		t.Errorf("API with a token and the revocations down: %d", resp2.StatusCode)
	}
}
