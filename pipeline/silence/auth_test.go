package silence_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/pagewatch/pagewatch/pipeline/silence"
)

func TestRequireToken(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	call := func(h http.Handler, remote, auth string, host ...string) int {
		r := httptest.NewRequest("GET", silence.APIPrefix, nil)
		r.RemoteAddr, r.Host = remote, "127.0.0.1:9102"
		if len(host) > 0 {
			r.Host = host[0]
		}
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	open := silence.RequireToken("", ok)
	for _, c := range []struct {
		name, remote, auth string
		h                  http.Handler
		want               int
	}{
		{"no token, loopback v4", "127.0.0.1:5000", "", open, 204},
		{"no token, loopback v6", "[::1]:5000", "", open, 204},
		{"no token, other host", "10.1.2.3:5000", "", open, 403},
		{"no token, other host with a token anyway", "10.1.2.3:5000", "Bearer whatever-it-is-here", open, 403},
		{"token, right", "10.1.2.3:5000", "Bearer 0123456789abcdef", silence.RequireToken("0123456789abcdef", ok), 204},
		{"token, wrong", "10.1.2.3:5000", "Bearer 0123456789abcdeX", silence.RequireToken("0123456789abcdef", ok), 401},
		{"token, missing, even on loopback", "127.0.0.1:5000", "", silence.RequireToken("0123456789abcdef", ok), 401},
		{"token, not bearer", "10.1.2.3:5000", "Basic 0123456789abcdef", silence.RequireToken("0123456789abcdef", ok), 401},
	} {
		if got := call(c.h, c.remote, c.auth); got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}
	// DNS rebinding: a page at attacker.example, re-pointed at 127.0.0.1,
	// reaches loopback from the browser but sends its own name.
	for host, want := range map[string]int{"attacker.example": 403, "attacker.example:9102": 403, "localhost:9102": 204, "[::1]:9102": 204, "127.0.0.1": 204} {
		if got := call(open, "127.0.0.1:5000", "", host); got != want {
			t.Errorf("no token, loopback caller, Host %s: status %d, want %d", host, got, want)
		}
	}
}
