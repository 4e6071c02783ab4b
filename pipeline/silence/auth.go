package silence

import (
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
)

// RequireToken guards an API on the admin listener. With a token, every
// request must carry it as "Authorization: Bearer <token>". Without one,
// only callers on loopback get through: the listener also serves probes
// and metrics and is often bound to every address (the Kubernetes
// manifests bind 0.0.0.0), and a silence is a way to stop alerts.
func RequireToken(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token == "" {
			if !fromLoopback(r) {
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
	errLoopbackOnly apiAuthError = "this API answers loopback callers only unless worker.api_token is set"
	errBadToken     apiAuthError = "missing or wrong bearer token (worker.api_token)"
)

func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
