package console

import (
	"crypto/hmac"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// flashMaxAge is how long a message waits for its page: the redirect
// after the action that made it follows at once.
const flashMaxAge = time.Minute

// flashMaxLen bounds a message in bytes, so the cookie stays well under
// a browser's 4 KB (an action on every dead letter names its first
// failure, whose error may be long).
const flashMaxLen = 500

// setFlash leaves msg for the next page drawn for this session, in a
// cookie signed with the session's id and an expiry. Messages are never
// read from the query: a link could then put words of its own on the
// real login page ("Session expired, re-enter your password at ...").
func (a *auth) setFlash(w http.ResponseWriter, session, msg string) {
	if len(msg) > flashMaxLen {
		cut := flashMaxLen
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	exp := strconv.FormatInt(a.now().Add(flashMaxAge).Unix(), 10)
	v := base64.RawURLEncoding.EncodeToString([]byte(msg)) + "." + exp + "." +
		base64.RawURLEncoding.EncodeToString(a.mac("flash", session, exp, msg))
	http.SetCookie(w, &http.Cookie{Name: a.cookie(flashCookie), Value: v, Path: "/", HttpOnly: true,
		Secure: a.secure, SameSite: http.SameSiteStrictMode, MaxAge: int(flashMaxAge.Seconds())})
}

// takeFlash returns the message left for this session, once: the cookie
// is cleared with the page that shows it. A message signed for another
// session, expired or altered is dropped unseen.
func (a *auth) takeFlash(w http.ResponseWriter, r *http.Request, session string) string {
	c, err := r.Cookie(a.cookie(flashCookie))
	if err != nil {
		return ""
	}
	http.SetCookie(w, &http.Cookie{Name: a.cookie(flashCookie), Value: "", Path: "/", HttpOnly: true,
		Secure: a.secure, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	parts := strings.Split(c.Value, ".")
	if len(parts) != 3 {
		return ""
	}
	msg, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return ""
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, a.mac("flash", session, parts[1], string(msg))) {
		return ""
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || a.now().Unix() >= exp {
		return ""
	}
	return string(msg)
}
