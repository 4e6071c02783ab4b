// Package console is pagewatch's web face: what is taking off now, the
// rules and their pages, a page's views and referrers, the history of
// crossings and notifications, dead letters to retry or discard, and the
// pipeline's lag, as server-rendered pages with a JSON API behind each.
// It owns its ports (ports.go): sinks/clickhouse implements the Store;
// NATS is read through broker/bus directly (nats.go).
package console

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/domain/clocks"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/pipeline/sweep"
)

// Deps are what the console reads from.
type Deps struct {
	Store       Store
	DeadLetters DeadLetters // nil: the dead letters page says none are reachable
	Pipeline    PipelineSource
	RuleStates  RuleStates
	Silences    Silences
	Revocations Revocations
	// Minutes are the stored per-minute counts (sinks/clickhouse Counts),
	// read to try a rule on the rules page (try.go); nil: it cannot.
	Minutes sweep.MinuteSource
	// Rules gives the sweeper's rules as last loaded (they are read again
	// on SIGHUP by the caller).
	Rules    func() []rules.Rule
	Logger   *slog.Logger
	Registry prometheus.Registerer
	Now      func() time.Time
}

// Server serves the console: the login, and each area's pages (a type
// per area: deadPages, historyPages, livePages, pagePages, pipelinePages,
// rulePages, silencePages), all drawn and guarded by one frame.
type Server struct {
	*frame
	// addrLimit counts failed logins per address, pairLimit per user name
	// and address (limit.go).
	addrLimit *limiter
	pairLimit *limiter
	proxies   []netip.Prefix
	live      *hub
	mux       *http.ServeMux
	ln        net.Listener
	timeouts  timeouts
}

// timeouts bound each connection's requests (tests shorten them).
type timeouts struct {
	header, read, write, idle time.Duration
}

// defaultTimeouts: a caller that sends a request, body included, or reads
// its answer slower than this holds a connection and a goroutine for
// nothing; the largest form is 64 KiB and the largest page a few hundred.
// The live stream bounds each of its writes instead of its whole answer
// (liveStream); it reads nothing, so the read timeout does not end it.
func defaultTimeouts() timeouts {
	return timeouts{header: 10 * time.Second, read: 30 * time.Second, write: time.Minute, idle: 2 * time.Minute}
}

// frame is what every page shares: the settings, what the console reads
// from, who is asking and whether they may change things, and how a page
// or an error is drawn.
type frame struct {
	cfg     atomic.Pointer[Config]
	deps    Deps
	auth    *auth
	zone    *time.Location
	tmpl    *templates
	metrics *metrics
	starts  *siteStarts     // each site's first minute, for pages' normals
	clocks  *clocks.Learner // each site's clocks, for the normals of rules with zone: auto
}

// New builds the console; Listen and Run serve it.
func New(cfg Config, d Deps) (*Server, error) {
	if d.Store == nil || d.Logger == nil || d.Registry == nil {
		return nil, errors.New("console: Store, Logger and Registry are required")
	}
	if cfg.Auth == AuthPassword && d.Revocations == nil {
		return nil, errors.New("console: Revocations are required with auth: password: a logout is recorded there")
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Rules == nil {
		d.Rules = func() []rules.Rule { return nil }
	}
	a, err := newAuth(cfg, d.Now)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	zone, err := time.LoadLocation(cfg.Zone)
	if err != nil {
		return nil, fmt.Errorf("console.zone: %w", err)
	}
	t, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	learner := clocks.NewLearner(d.Store, d.Logger)
	s := &Server{frame: &frame{deps: d, auth: a, zone: zone, tmpl: t, metrics: newMetrics(d.Registry), starts: newSiteStarts(d.Store, d.Now), clocks: learner},
		addrLimit: newLimiter(20, d.Now), pairLimit: newLimiter(5, d.Now), timeouts: defaultTimeouts(),
	}
	if s.proxies, err = cfg.proxies(); err != nil {
		return nil, err
	}
	s.cfg.Store(&cfg)
	s.live = newHub(d.Store, cfg.LiveInterval, d.Now, d.Logger, s.metrics)
	s.live.zone = zone
	s.live.held = &heldCache{states: d.RuleStates, rules: d.Rules}
	s.live.rules, s.live.states = d.Rules, d.RuleStates
	s.live.clocks = learner
	s.routes()
	return s, nil
}

// Listen binds the address, so a port in use fails at start.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.cfg.Load().Listen)
	if err != nil {
		return fmt.Errorf("console: listen %s: %w", s.cfg.Load().Listen, err)
	}
	s.ln = ln
	return nil
}

// Addr is the bound address, once Listen returned.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Handler is the console's HTTP handler.
func (s *Server) Handler() http.Handler { return s.secure(s.loopbackNames(s.mux)) }

// Run serves until ctx is done, then lets requests in flight finish for
// a few seconds. Server-sent event streams end with ctx.
func (s *Server) Run(ctx context.Context) error {
	if s.ln == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	cfg := s.cfg.Load()
	tm := s.timeouts
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: tm.header, ReadTimeout: tm.read,
		WriteTimeout: tm.write, IdleTimeout: tm.idle, BaseContext: func(net.Listener) context.Context { return ctx }}
	ln := s.ln
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return fmt.Errorf("console.tls_cert: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	liveDone := make(chan error, 1)
	go func() { liveDone <- s.live.Run(ctx) }()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.deps.Logger.Info("console serving", "addr", s.Addr(), "auth", cfg.Auth, "tls", cfg.TLSCert != "")
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = srv.Shutdown(sctx)
	}
	<-liveDone
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// secure sets the headers every response carries: a strict CSP (no
// inline script or style, so an injected tag does nothing), no framing,
// no sniffing, no referrer leaking page paths elsewhere; and, over TLS,
// HSTS, so a browser that once reached the console by HTTPS does not
// send its session cookie over plain HTTP to whoever answers there.
func (s *Server) secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		if r.TLS != nil {
			hd.Set("Strict-Transport-Security", "max-age=31536000")
		}
		hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// loopbackNames refuses, with auth: none, a request whose Host is not a
// loopback name. Every caller is the operator then, and a page on any
// site can point a name of its own at 127.0.0.1 (DNS rebinding): the
// browser would let that page read the console and post its forms as
// its own site's. Validate allows auth: none only on a loopback listen
// address, whose host is always one of these names.
func (s *Server) loopbackNames(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Load().Auth == AuthNone && !loopbackHost(r.Host) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusMisdirectedRequest)
			fmt.Fprintf(w, "console.auth is none, so the console answers only to a loopback name "+
				"(localhost, 127.0.0.1, [::1]), not to %q: browse to it by one of those, "+
				"or set console.auth: password to reach it by another name.\n", r.Host)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header names this machine itself:
// localhost or a loopback address, with any port.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// route registers a handler, timed under its name, behind the login
// unless public.
func (s *Server) route(pattern, name string, public bool, h http.HandlerFunc) {
	timed := func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h(w, r)
		s.metrics.request.WithLabelValues(name).Observe(time.Since(start).Seconds())
	}
	if public {
		s.mux.HandleFunc(pattern, timed)
		return
	}
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.who(w, r)
		if !ok {
			return
		}
		timed(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// who finds the caller, or answers 401 (API) or a redirect to the login
// page.
func (s *frame) who(w http.ResponseWriter, r *http.Request) (Principal, bool) {
	if s.cfg.Load().Auth == AuthNone {
		return Principal{Name: "local", Role: Operator}, true
	}
	if p, given, ok := s.auth.fromToken(r); given {
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="pagewatch"`)
			s.fail(w, r, http.StatusUnauthorized, "bad bearer token")
		}
		return p, ok
	}
	if p, ok := s.auth.fromSession(r); ok {
		revoked, err := s.revoked(r.Context(), p)
		if err != nil {
			s.deps.Logger.Warn("console session not checked against the logouts", "user", p.Name, "err", err)
			s.fail(w, r, http.StatusServiceUnavailable, "the console cannot tell whether this session was logged out "+
				"(the record of logouts, in NATS, is unreachable), so it is refused for now: try again shortly; bearer tokens still work")
			return Principal{}, false
		}
		if !revoked {
			return p, true
		}
	}
	if isAPI(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="pagewatch"`)
		s.fail(w, r, http.StatusUnauthorized, "log in or send a bearer token")
		return Principal{}, false
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
	return Principal{}, false
}

// revocationTimeout bounds asking or telling the revocations.
const revocationTimeout = 3 * time.Second

// stillWho reports whether a request's credentials still hold: a
// stream (live.go) outlives the check its request began with, and a
// session logged out, expired or of a user removed since, or a bearer
// token taken out of the config, ends it.
func (s *frame) stillWho(r *http.Request) bool {
	if s.cfg.Load().Auth == AuthNone {
		return true
	}
	if _, given, ok := s.auth.fromToken(r); given {
		return ok
	}
	p, ok := s.auth.fromSession(r)
	if !ok {
		return false
	}
	// A stream already let in is ended by a logout known, not by NATS
	// being out of reach for a moment (the page is refused then, as
	// who does, until it is back).
	revoked, err := s.revoked(r.Context(), p)
	return err != nil || !revoked
}

// revoked reports whether p's session logged out. An error is not taken
// for "no": a copied cookie would then work whenever NATS is down.
func (s *frame) revoked(ctx context.Context, p Principal) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, revocationTimeout)
	defer cancel()
	return s.deps.Revocations.Revoked(ctx, p.session)
}

func isAPI(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/api/") }

// change checks that a POST may change something: an operator, a valid
// CSRF token unless the caller came with a bearer token, and a reachable
// store of what it changes (NATS).
func (s *frame) change(w http.ResponseWriter, r *http.Request, reachable bool) (Principal, bool) {
	p, _ := principalOf(r.Context())
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.fail(w, r, http.StatusMethodNotAllowed, "POST only")
		return p, false
	}
	if !p.Token {
		if err := s.auth.checkCSRF(r, p.session); err != nil {
			s.fail(w, r, http.StatusForbidden, "the form has expired or came from elsewhere ("+err.Error()+"): reload the page and try again")
			return p, false
		}
	}
	if !p.CanChange() {
		s.metrics.forbidden.Inc()
		s.fail(w, r, http.StatusForbidden, "only operators may do this; you are "+p.Name+" ("+string(p.Role)+")")
		return p, false
	}
	if !reachable {
		s.fail(w, r, http.StatusServiceUnavailable, "no NATS connection")
		return p, false
	}
	return p, true
}
