package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Principal is who is asking.
type Principal struct {
	Name string
	Role Role
	// Token is set when the caller came with a bearer token: no cookie,
	// so no CSRF check either.
	Token bool
	// session is the id of the session the caller came with (none with
	// a token or auth: none), and expires its end.
	session string
	expires time.Time
}

// CanChange reports whether p may retry, discard or silence.
func (p Principal) CanChange() bool { return p.Role == Operator }

type principalKey struct{}

func principalOf(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// The cookies' names, after the __Host- prefix when they are Secure
// (auth.cookie).
const (
	sessionCookie = "pw_session"
	csrfCookie    = "pw_csrf"
	flashCookie   = "pw_flash"
	csrfField     = "csrf"
	csrfHeader    = "X-CSRF-Token"
)

// auth checks logins, sessions, bearer tokens and CSRF tokens.
type auth struct {
	mode   string
	users  map[string]User
	tokens []Token
	key    []byte
	ttl    time.Duration
	secure bool
	// prefix is "__Host-" when the cookies are Secure: a browser takes
	// such a cookie only over HTTPS, for this host alone and path /, so
	// a sibling subdomain or a plain-HTTP page cannot plant one.
	prefix string
	now    func() time.Time
	// dummyHash is compared against when a user does not exist, so that
	// a login for an unknown name takes as long as one for a known name
	// (of the highest cost: users' costs may differ).
	dummyHash []byte
}

func newAuth(cfg Config, now func() time.Time) (*auth, error) {
	a := &auth{mode: cfg.Auth, users: map[string]User{}, tokens: cfg.Tokens, ttl: cfg.SessionTTL,
		secure: cfg.secureCookies(), now: now}
	if a.secure {
		a.prefix = "__Host-"
	}
	for _, u := range cfg.Users {
		a.users[u.Name] = u
	}
	if cfg.SessionKey.IsSet() {
		a.key = []byte(cfg.SessionKey.Reveal())
	} else {
		a.key = make([]byte, 32)
		if _, err := rand.Read(a.key); err != nil {
			return nil, err
		}
	}
	// As costly as the costliest user's hash: a cheaper one answers an
	// unknown name hundreds of times sooner (1.5 ms against 510 ms at
	// cost 12), which tells a stranger which names exist.
	cost := bcrypt.MinCost
	for _, u := range cfg.Users {
		if c, err := bcrypt.Cost([]byte(u.PasswordHash)); err == nil {
			cost = max(cost, c)
		}
	}
	h, err := bcrypt.GenerateFromPassword([]byte("not a password"), cost)
	if err != nil {
		return nil, err
	}
	a.dummyHash = h
	return a, nil
}

// cookie is the name a cookie goes by.
func (a *auth) cookie(name string) string { return a.prefix + name }

func (a *auth) mac(parts ...string) []byte {
	m := hmac.New(sha256.New, a.key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

// check returns the user whose password this is.
func (a *auth) check(name, password string) (User, bool) {
	u, ok := a.users[name]
	hash := a.dummyHash
	if ok {
		hash = []byte(u.PasswordHash)
	}
	err := bcrypt.CompareHashAndPassword(hash, []byte(password))
	return u, ok && err == nil
}

// issue sets the session cookie: user, role, expiry and a random id
// (what a logout revokes), signed together with a digest of the user's
// password hash, so that a new password voids every session of the old.
func (a *auth) issue(w http.ResponseWriter, u User) {
	exp := a.now().Add(a.ttl).Unix()
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	payload := base64.RawURLEncoding.EncodeToString([]byte(u.Name)) + "." + string(u.Role) + "." +
		strconv.FormatInt(exp, 10) + "." + base64.RawURLEncoding.EncodeToString(id)
	sig := base64.RawURLEncoding.EncodeToString(a.sessionMAC(payload, u))
	http.SetCookie(w, &http.Cookie{Name: a.cookie(sessionCookie), Value: payload + "." + sig, Path: "/",
		HttpOnly: true, Secure: a.secure, SameSite: http.SameSiteStrictMode, MaxAge: int(a.ttl.Seconds())})
}

func (a *auth) clear(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: a.cookie(sessionCookie), Value: "", Path: "/", HttpOnly: true,
		Secure: a.secure, SameSite: http.SameSiteStrictMode, MaxAge: -1})
}

func (a *auth) sessionMAC(payload string, u User) []byte {
	pw := sha256.Sum256([]byte(u.PasswordHash))
	return a.mac("session", payload, string(pw[:]))
}

// fromSession reads a valid session cookie: signed, not expired, of a
// user with the same role and password hash as when it was issued (a
// user removed or changed in the config is logged out at once). Whether
// it was logged out since is the caller's to ask (frame.who).
func (a *auth) fromSession(r *http.Request) (Principal, bool) {
	c, err := r.Cookie(a.cookie(sessionCookie))
	if err != nil {
		return Principal{}, false
	}
	i := strings.LastIndexByte(c.Value, '.')
	if i < 0 {
		return Principal{}, false
	}
	payload, sig := c.Value[:i], c.Value[i+1:]
	parts := strings.Split(payload, ".")
	if len(parts) != 4 {
		return Principal{}, false
	}
	name, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return Principal{}, false
	}
	u, ok := a.users[string(name)]
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err != nil || !hmac.Equal(got, a.sessionMAC(payload, u)) {
		return Principal{}, false
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || a.now().Unix() >= exp || string(u.Role) != parts[1] || parts[3] == "" {
		return Principal{}, false
	}
	return Principal{Name: u.Name, Role: u.Role, session: parts[3], expires: time.Unix(exp, 0)}, true
}

// fromToken reads a bearer token.
func (a *auth) fromToken(r *http.Request) (Principal, bool, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return Principal{}, false, false
	}
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return Principal{}, true, false
	}
	for _, t := range a.tokens {
		if subtle.ConstantTimeCompare([]byte(tok), []byte(t.Token.Reveal())) == 1 {
			return Principal{Name: "token:" + t.Name, Role: t.Role, Token: true}, true, true
		}
	}
	return Principal{}, true, false
}

// csrfToken is the token forms carry: bound by an HMAC to the browser's
// CSRF cookie, so a page on another site can neither read nor make it
// (double submit, signed), and to the session (session: its id; "" before
// a login), so a pair of token and cookie taken elsewhere, even from the
// login page of the same browser, does not pass with another session.
func (a *auth) csrfToken(w http.ResponseWriter, r *http.Request, session string) string {
	var v string
	if c, err := r.Cookie(a.cookie(csrfCookie)); err == nil && len(c.Value) == 32 {
		v = c.Value
	} else {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		v = hex.EncodeToString(b)
		http.SetCookie(w, &http.Cookie{Name: a.cookie(csrfCookie), Value: v, Path: "/", HttpOnly: true,
			Secure: a.secure, SameSite: http.SameSiteStrictMode})
		// Later reads in this request see it.
		r.AddCookie(&http.Cookie{Name: a.cookie(csrfCookie), Value: v})
	}
	return base64.RawURLEncoding.EncodeToString(a.mac("csrf", v, session))
}

// checkCSRF accepts a POST whose form field or header carries the token
// of the browser's CSRF cookie and the session (csrfToken).
func (a *auth) checkCSRF(r *http.Request, session string) error {
	c, err := r.Cookie(a.cookie(csrfCookie))
	if err != nil {
		return errors.New("no CSRF cookie")
	}
	tok := r.Header.Get(csrfHeader)
	if tok == "" && r.ParseForm() == nil {
		// Forms are URL-encoded: a multipart body, which the standard
		// library would spool to disk to look for the token, has none.
		tok = r.PostForm.Get(csrfField)
	}
	got, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || !hmac.Equal(got, a.mac("csrf", c.Value, session)) {
		return errors.New("bad CSRF token")
	}
	return nil
}
