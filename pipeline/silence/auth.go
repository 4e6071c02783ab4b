package silence

import (
	"crypto/subtle"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// RequireToken guards an API on the admin listener. With a token, every
// request must carry it as "Authorization: Bearer <token>". Without one,
// only callers on loopback get through: the listener also serves probes
// and metrics and is often bound to every address (the Kubernetes
// manifests bind 0.0.0.0), and a silence is a way to stop alerts. They
// must also name a loopback host (Host: localhost, 127.0.0.1, [::1]): a
// web page whose name an attacker re-points at 127.0.0.1 (DNS rebinding)
// reaches loopback from the user's browser, but under its own name.
func RequireToken(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token == "" {
			if !fromLoopback(r) || !LoopbackHost(r.Host) {
				httpError(w, http.StatusForbidden, errLoopbackOnly)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="pagewatch"`)
			httpError(w, http.StatusUnauthorized, errBadToken)
			return
		}
		next.ServeHTTP(w, r)
	})
}

type apiAuthError string

func (e apiAuthError) Error() string { return string(e) }

const (
	errLoopbackOnly  apiAuthError = "this API answers loopback callers only unless worker.api_token is set"
	errBadToken      apiAuthError = "missing or wrong bearer token (worker.api_token)"
	errForeignOrigin apiAuthError = "refused: the request came from another site's page"
	errNotJSON       apiAuthError = "send changes with Content-Type: application/json"
)

func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// LoopbackHost reports whether a Host header names this machine by a
// loopback name or address, with or without a port.
func LoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// guardChange refuses a change that a web page elsewhere could have made
// through the caller's browser. Browsers send a cross-site form POST
// (text/plain or a form encoding) without asking, but not one with
// Content-Type application/json: that needs a CORS preflight, which this
// API never answers. An Origin other than the API's own is refused too.
func guardChange(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r.Host) {
			httpError(w, http.StatusForbidden, errForeignOrigin)
			return
		}
		if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
			httpError(w, http.StatusForbidden, errForeignOrigin)
			return
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			httpError(w, http.StatusUnsupportedMediaType, errNotJSON)
			return
		}
		next(w, r)
	}
}

// sameOrigin reports whether an Origin header names host.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}
