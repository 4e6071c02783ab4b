package console

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A message on a page comes from the action that made it, never from the
// query: a link cannot put words of its own on the login page.
func TestFlashIsSignedNotQueried(t *testing.T) {
	b := setup(t, nil)
	lure := "Session expired. Re-enter your password at https://evil.example/login"
	for _, u := range []string{"/login?flash=", "/history?flash="} {
		cookies := cookiesOf(t, b)
		_, body := send(t, http.MethodGet, b.srv.URL+u+url.QueryEscape(lure), "", cookies, nil)
		if strings.Contains(body, "evil.example") || strings.Contains(body, `data-testid="flash"`) {
			t.Errorf("%s shows the query's text:\n%s", u, body)
		}
	}

	cookies := cookiesOf(t, b)
	resp, page := send(t, http.MethodGet, b.srv.URL+"/dead", "", cookies, nil)
	cookies = append(cookies, resp.Cookies()...)
	resp, _ = send(t, http.MethodPost, b.srv.URL+"/dead/retry", "", cookies, strings.NewReader(url.Values{"seq": {"7"}, "csrf": {csrfOf(t, page)}}.Encode()))
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dead" {
		t.Fatalf("retry: %d to %q, want 303 to /dead", resp.StatusCode, resp.Header.Get("Location"))
	}
	var flash *http.Cookie
	for _, c := range resp.Cookies() {
		if strings.HasSuffix(c.Name, flashCookie) {
			flash = c
		}
	}
	if flash == nil || !flash.HttpOnly || flash.MaxAge <= 0 || flash.MaxAge > 60 {
		t.Fatalf("retry set the flash cookie %+v; want a short-lived HttpOnly one", flash)
	}
	resp, body := send(t, http.MethodGet, b.srv.URL+"/dead", "", append(cookies, flash), nil)
	if !strings.Contains(body, `data-testid="flash">retry: dead letter 7 (jobs).<`) {
		t.Errorf("/dead after the retry lacks its message:\n%s", body)
	}
	cleared := false
	for _, c := range resp.Cookies() {
		cleared = cleared || (c.Name == flash.Name && c.MaxAge < 0)
	}
	if !cleared {
		t.Errorf("the message was shown, but its cookie not cleared: %v", resp.Cookies())
	}
	// A cookie of the same name with other words is not shown.
	forged := &http.Cookie{Name: flash.Name, Value: strings.Replace(flash.Value, flash.Value[:4], "AAAA", 1)}
	if _, body := send(t, http.MethodGet, b.srv.URL+"/dead", "", append(cookies, forged), nil); strings.Contains(body, `data-testid="flash"`) {
		t.Errorf("a forged flash cookie is shown:\n%s", body)
	}
}
