package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// answer is what send got: the response's status, headers and cookies
// (its body is read and closed).
type answer struct {
	StatusCode int
	Header     http.Header
	cookies    []*http.Cookie
}

func (a answer) Cookies() []*http.Cookie { return a.cookies }

// send makes one request with the given Host header and cookies (a
// cookie jar keys them by the URL, which a rebound name does not change).
func send(t *testing.T, method, u, host string, cookies []*http.Cookie, body io.Reader) (answer, string) {
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
	return answer{StatusCode: resp.StatusCode, Header: resp.Header, cookies: resp.Cookies()}, string(b)
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
			// Secure, the cookies are __Host- ones: a sibling site on
			// plain HTTP or another subdomain cannot set them.
			if strings.HasPrefix(ck.Name, "__Host-") != c.want || ck.Path != "/" || ck.Domain != "" {
				t.Errorf("cookie_secure %s: cookie %s, path %q, domain %q; want the __Host- prefix %v, path /, no domain", c.name, ck.Name, ck.Path, ck.Domain, c.want)
			}
		}
		// A session cookie without the prefix is not read.
		if c.want {
			s := sessionOf(t, cookies)
			plain := &http.Cookie{Name: strings.TrimPrefix(s.Name, "__Host-"), Value: s.Value}
			if st, _ := status(t, b.srv.URL+"/history", plain); st != http.StatusSeeOther {
				t.Errorf("the session cookie without its prefix: %d, want 303", st)
			}
		}
	}
}

// A CSRF token is bound to the session it was given in: a pair of token
// and cookie taken from the login page, or from another user's session,
// does not pass with alice's session.
func TestCSRFTokenIsBoundToTheSession(t *testing.T) {
	b := setup(t, nil)
	alice := sessionOf(t, cookiesOf(t, b))
	anon, loginPage := send(t, http.MethodGet, b.srv.URL+"/login", "", nil, nil)
	bobCookies := loginAs(t, b, "bob", "pw-bob")
	bobPage, bobDead := send(t, http.MethodGet, b.srv.URL+"/dead", "", bobCookies, nil)
	for name, pair := range map[string]struct {
		cookies []*http.Cookie
		token   string
	}{
		"the login page's": {anon.Cookies(), csrfOf(t, loginPage)},
		"bob's session's":  {append(bobCookies, bobPage.Cookies()...), csrfOf(t, bobDead)},
	} {
		var cookies []*http.Cookie
		for _, c := range pair.cookies {
			if !strings.HasSuffix(c.Name, sessionCookie) {
				cookies = append(cookies, c)
			}
		}
		resp, _ := send(t, http.MethodPost, b.srv.URL+"/dead/discard", "", append(cookies, alice),
			strings.NewReader(url.Values{"seq": {"8"}, "csrf": {pair.token}}.Encode()))
		if resp.StatusCode != http.StatusForbidden || len(b.dead.letters) != 2 {
			t.Errorf("alice's session with %s CSRF token and cookie: %d, %d dead letters left", name, resp.StatusCode, len(b.dead.letters))
		}
	}
	// Her own page's token passes.
	cookies := []*http.Cookie{alice}
	resp, page := send(t, http.MethodGet, b.srv.URL+"/dead", "", cookies, nil)
	resp, _ = send(t, http.MethodPost, b.srv.URL+"/dead/discard", "", append(cookies, resp.Cookies()...),
		strings.NewReader(url.Values{"seq": {"8"}, "csrf": {csrfOf(t, page)}}.Encode()))
	if resp.StatusCode != http.StatusSeeOther || len(b.dead.letters) != 1 {
		t.Errorf("alice's own token: %d, %d dead letters left", resp.StatusCode, len(b.dead.letters))
	}
}

// Over TLS every answer carries HSTS, so a browser that reached the
// console by HTTPS once does not send its cookie by plain HTTP later;
// over plain HTTP (behind a proxy, which sets its own) none.
func TestHSTSOverTLS(t *testing.T) {
	b := setup(t, nil)
	h := b.s.Handler()
	for _, c := range []struct{ url, want string }{
		{"https://console.example/login", "max-age=31536000"},
		{"http://127.0.0.1/login", ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, c.url, nil))
		if got := rec.Header().Get("Strict-Transport-Security"); got != c.want {
			t.Errorf("%s: Strict-Transport-Security %q, want %q", c.url, got, c.want)
		}
	}
}

// countingReader is head, then zero bytes up to n in all, counting how
// many were read.
type countingReader struct {
	head    string
	n, read int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.read >= c.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), c.n-c.read)
	clear(p[:k])
	if c.read < int64(len(c.head)) {
		k = int64(copy(p[:k], c.head[c.read:]))
	}
	c.read += k
	return int(k), nil
}

// The public form routes read a bounded body, whoever sends it: a
// logout with a made-up CSRF cookie and a 256 MiB body, URL-encoded or
// multipart, is refused after a little of it. Before, /logout read it
// all (the multipart one spooled to disk) before its 403: a few such
// requests at once took the console's 512 MiB.
func TestPublicFormsReadABoundedBody(t *testing.T) {
	b := setup(t, nil)
	for _, route := range []string{"/logout", "/login"} {
		for kind, head := range map[string]string{
			"application/x-www-form-urlencoded": "f=",
			"multipart/form-data; boundary=x":   "--x\r\nContent-Disposition: form-data; name=\"f\"; filename=\"z\"\r\n\r\n",
		} {
			body := &countingReader{head: head, n: 256 << 20}
			req, err := http.NewRequest(http.MethodPost, b.srv.URL+route, body)
			if err != nil {
				t.Fatal(err)
			}
			req.ContentLength = body.n
			req.Header.Set("Content-Type", kind)
			req.AddCookie(&http.Cookie{Name: csrfCookie, Value: "0123456789abcdef0123456789abcdef"})
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode < 400 {
					t.Errorf("%s, %s: %d, want it refused", route, kind, resp.StatusCode)
				}
			}
			// What the client wrote before the server stopped reading:
			// the bound and what the sockets' buffers hold (4 to 5 MiB
			// here; 20 MiB and all 256 read before the bound).
			if body.read > 12<<20 {
				t.Errorf("%s, %s: %d MiB of the body sent before an answer, want a bounded read", route, kind, body.read>>20)
			}
		}
	}
}
