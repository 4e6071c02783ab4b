package console

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/pagewatch/pagewatch/config/secret"
)

// Config is the `console:` section.
type Config struct {
	// Listen is where the web pages and the JSON API are served.
	Listen string `yaml:"listen"`
	// AdminListen serves /metrics, /healthz and /readyz, like the other
	// daemons' listen keys; "" turns it off.
	AdminListen string `yaml:"admin_listen"`
	// Auth is "password" (users and tokens below) or "none", which is
	// allowed only when Listen is a loopback address.
	Auth   string  `yaml:"auth"`
	Users  []User  `yaml:"users"`
	Tokens []Token `yaml:"tokens"`
	// SessionKey signs session cookies. Unset, a random key is made at
	// each start, which logs everyone out on restart and does not let
	// two consoles behind one load balancer share sessions.
	SessionKey secret.Value `yaml:"session_key"`
	// SessionTTL is how long a login lasts.
	SessionTTL time.Duration `yaml:"session_ttl"`
	// Zone is the IANA time zone the pages show times in.
	Zone string `yaml:"zone"`
	// LiveInterval is how often the live view asks ClickHouse, once for
	// every open browser.
	LiveInterval time.Duration `yaml:"live_interval"`
	// TLS, when both files are set, serves HTTPS and marks the session
	// cookie Secure.
	TLSCert string `yaml:"tls_cert"`
	TLSKey  string `yaml:"tls_key"`
	// CookieSecure marks the cookies Secure: browsers then send them over
	// HTTPS only. Unset (null), it is on when the console serves TLS
	// itself; set it true behind a proxy that terminates TLS, which the
	// console cannot see.
	CookieSecure *bool `yaml:"cookie_secure"`
	// TrustedProxies are the addresses (CIDRs, or single addresses) of
	// the proxies in front of the console, whose X-Forwarded-For names
	// the client a login came from. Empty, the header is ignored: the
	// login limit then counts every login through a proxy as one address.
	TrustedProxies []string `yaml:"trusted_proxies"`
}

// User is one person who may log in.
type User struct {
	Name string `yaml:"name"`
	// PasswordHash is a bcrypt hash ("$2a$..."), e.g. from
	// `htpasswd -nbBC 12 "" 'password' | cut -d: -f2`.
	PasswordHash string `yaml:"password_hash"`
	Role         Role   `yaml:"role"`
}

// Token is a bearer token for the JSON API.
type Token struct {
	Name  string       `yaml:"name"`
	Token secret.Value `yaml:"token"`
	Role  Role         `yaml:"role"`
}

// Role is what a user may do: viewers look, operators also change.
type Role string

// The roles.
const (
	Viewer   Role = "viewer"
	Operator Role = "operator"
)

// Auth modes.
const (
	AuthPassword = "password"
	AuthNone     = "none"
)

// DefaultConfig returns the defaults documented in deploy/pagewatch.example.yaml.
func DefaultConfig() Config {
	return Config{
		Listen:       "127.0.0.1:9105",
		AdminListen:  "127.0.0.1:9106",
		Auth:         AuthPassword,
		SessionTTL:   12 * time.Hour,
		Zone:         "UTC",
		LiveInterval: 2 * time.Second,
	}
}

// minSessionKey is the shortest session_key accepted: an HMAC-SHA256 key
// shorter than this is guessable sooner than the hash.
const minSessionKey = 32

// Validate reports every problem, naming its key.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Listen == "" {
		add("console.listen: must be set")
	} else if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		add("console.listen: %v", err)
	}
	switch c.Auth {
	case AuthNone:
		if !loopback(c.Listen) {
			add("console.auth: none is allowed only when console.listen is a loopback address (127.0.0.1, ::1, localhost), got %q", c.Listen)
		}
	case AuthPassword:
		if len(c.Users) == 0 && len(c.Tokens) == 0 {
			add("console.users: auth: password needs at least one user or token")
		}
	default:
		add(`console.auth: must be "password" or "none", got %q`, c.Auth)
	}
	seen := map[string]bool{}
	for i, u := range c.Users {
		key := fmt.Sprintf("console.users[%d]", i)
		if u.Name == "" {
			add("%s.name: must be set", key)
		} else if seen[u.Name] {
			add("%s.name: %q is given twice", key, u.Name)
		}
		seen[u.Name] = true
		if _, err := bcrypt.Cost([]byte(u.PasswordHash)); err != nil {
			add("%s.password_hash: must be a bcrypt hash ($2a$, $2b$ or $2y$): %v", key, err)
		}
		if err := u.Role.validate(); err != nil {
			add("%s.role: %v", key, err)
		}
	}
	tokens := map[string]bool{}
	for i, t := range c.Tokens {
		key := fmt.Sprintf("console.tokens[%d]", i)
		if t.Name == "" {
			add("%s.name: must be set", key)
		}
		if err := t.Token.Err(); err != nil {
			add("%s.token: %v", key, err)
		} else if len(t.Token.Reveal()) < 16 {
			add("%s.token: must be at least 16 characters", key)
		} else if tokens[t.Token.Reveal()] {
			add("%s.token: the same token is given twice", key)
		}
		tokens[t.Token.Reveal()] = true
		if err := t.Role.validate(); err != nil {
			add("%s.role: %v", key, err)
		}
	}
	if err := c.SessionKey.Err(); err != nil {
		add("console.session_key: %v", err)
	} else if c.SessionKey.IsSet() && len(c.SessionKey.Reveal()) < minSessionKey {
		add("console.session_key: must be at least %d bytes", minSessionKey)
	}
	if c.SessionTTL < time.Minute {
		add("console.session_ttl: must be at least 1m, got %s", c.SessionTTL)
	}
	if _, err := time.LoadLocation(c.Zone); err != nil || c.Zone == "" {
		add("console.zone: not a time zone: %q", c.Zone)
	}
	if c.LiveInterval < 500*time.Millisecond {
		add("console.live_interval: must be at least 500ms, got %s", c.LiveInterval)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		add("console.tls_cert: tls_cert and tls_key go together")
	}
	if _, err := c.proxies(); err != nil {
		add("%v", err)
	}
	return errors.Join(errs...)
}

// proxies are trusted_proxies, parsed.
func (c Config) proxies() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for i, s := range c.TrustedProxies {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("console.trusted_proxies[%d]: %q is neither an address nor a CIDR (e.g. 10.0.0.0/8)", i, s)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// secureCookies is cookie_secure, or whether the console serves TLS
// when it is unset.
func (c Config) secureCookies() bool {
	if c.CookieSecure != nil {
		return *c.CookieSecure
	}
	return c.TLSCert != ""
}

func (r Role) validate() error {
	if r != Viewer && r != Operator {
		return fmt.Errorf(`must be "viewer" or "operator", got %q`, string(r))
	}
	return nil
}

// loopback reports whether a listen address only accepts local callers.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
