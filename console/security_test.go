package console

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// send makes one request with the given Host header and cookies (a
// cookie jar keys them by the URL, which a rebound name does not change).
func send(t *testing.T, method, u, host string, cookies []*http.Cookie, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// With auth: none every caller is the operator, so a page on another
// site that rebinds its name to 127.0.0.1 would be one too: only loopback
// names are served.
func TestAuthNoneServesLoopbackHostsOnly(t *testing.T) {
	b := setup(t, func(c *Config) { c.Auth = AuthNone })
	for _, host := range []string{"attacker.example", "attacker.example:9105", "127.0.0.1.attacker.example", "localhost.attacker.example", "10.0.0.1:9105"} {
		resp, body := send(t, http.MethodGet, b.srv.URL+"/dead", host, nil, nil)
		if resp.StatusCode != http.StatusMisdirectedRequest || strings.Contains(body, `name="csrf"`) || !strings.Contains(body, "auth") {
			t.Errorf("GET /dead with Host %q: %d\n%s", host, resp.StatusCode, body)
		}
		if len(resp.Cookies()) != 0 {
			t.Errorf("Host %q got cookies %v", host, resp.Cookies())
		}
	}
	// The attack as it was made: the token from a page read through the
	// rebound name, then the discard.
	resp, page := send(t, http.MethodGet, b.srv.URL+"/dead", "127.0.0.1", nil, nil)
	resp, _ = send(t, http.MethodPost, b.srv.URL+"/dead/discard-all", "attacker.example", resp.Cookies(),
		strings.NewReader("csrf="+csrfOf(t, page)))
	if resp.StatusCode != http.StatusMisdirectedRequest || len(b.dead.letters) != 2 {
		t.Errorf("discard-all with Host attacker.example: %d, %d dead letters left", resp.StatusCode, len(b.dead.letters))
	}
	for _, host := range []string{"localhost", "LOCALHOST:9105", "127.0.0.1", "127.3.4.5:80", "[::1]", "[::1]:9105"} {
		if resp, body := send(t, http.MethodGet, b.srv.URL+"/dead", host, nil, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("GET /dead with Host %q: %d\n%s", host, resp.StatusCode, body)
		}
	}
	// With logins on, the Host is not what protects the console.
	pw := setup(t, nil)
	if resp, _ := send(t, http.MethodGet, pw.srv.URL+"/login", "console.example.com", nil, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("auth: password, GET /login with Host console.example.com: %d", resp.StatusCode)
	}
}

// cookiesOf logs alice in by hand and returns every cookie set on the
// way: the login page's and the login's.
func cookiesOf(t *testing.T, b *bundle) []*http.Cookie {
	t.Helper()
	return loginAs(t, b, "alice", "pw-alice")
}

func loginAs(t *testing.T, b *bundle, user, password string) []*http.Cookie {
	t.Helper()
	resp, page := send(t, http.MethodGet, b.srv.URL+"/login", "", nil, nil)
	cookies := resp.Cookies()
	resp, _ = send(t, http.MethodPost, b.srv.URL+"/login", "", cookies,
		strings.NewReader(url.Values{"user": {user}, "password": {password}, "csrf": {csrfOf(t, page)}}.Encode()))
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	return append(cookies, resp.Cookies()...)
}

// Behind a proxy that terminates TLS the console serves plain HTTP, and
// only cookie_secure tells it the browser came by HTTPS.
func TestCookieSecure(t *testing.T) {
	on := true
	for _, c := range []struct {
		name   string
		secure *bool
		want   bool
	}{{"unset, no TLS", nil, false}, {"true", &on, true}} {
		b := setup(t, func(cfg *Config) { cfg.CookieSecure = c.secure })
		cookies := cookiesOf(t, b)
		if len(cookies) < 2 {
			t.Fatalf("%s: cookies %v", c.name, cookies)
		}
		for _, ck := range cookies {
			if ck.Secure != c.want {
				t.Errorf("cookie_secure %s: cookie %s Secure=%v, want %v", c.name, ck.Name, ck.Secure, c.want)
			}
		}
	}
}
