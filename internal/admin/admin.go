// Package admin serves a daemon's operational endpoints: /metrics for
// Prometheus, /healthz (the process is alive) and /readyz (its
// dependencies answer).
package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Check reports whether one dependency is usable.
type Check func(ctx context.Context) error

// Server is the admin HTTP server.
type Server struct {
	// ReadTimeout bounds reading a whole request, body included: the
	// listener serves public links (worker.links), and a client that
	// trickles a body must not hold a connection open. IdleTimeout closes
	// kept-alive connections nobody uses. New sets both.
	ReadTimeout, IdleTimeout time.Duration

	addr   string
	mux    *http.ServeMux
	mu     sync.Mutex
	checks map[string]Check
	logger *slog.Logger
	ln     net.Listener
}

// New returns a server for addr (host:port) exposing reg.
func New(addr string, reg *prometheus.Registry, checks map[string]Check, logger *slog.Logger) *Server {
	s := &Server{addr: addr, mux: http.NewServeMux(), checks: map[string]Check{}, logger: logger,
		ReadTimeout: 15 * time.Second, IdleTimeout: 2 * time.Minute}
	for name, c := range checks {
		s.checks[name] = c
	}
	s.mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	s.mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	s.mux.HandleFunc("/readyz", s.ready)
	return s
}

// Handle serves h at pattern (http.ServeMux syntax) beside the
// operational endpoints: a daemon's own admin API.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// AddCheck adds (or replaces) a dependency check of /readyz; it may be
// called while the server runs, as dependencies are connected.
func (s *Server) AddCheck(name string, c Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks[name] = c
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	s.mu.Lock()
	checks := make(map[string]Check, len(s.checks))
	names := make([]string, 0, len(s.checks))
	for n, c := range s.checks {
		checks[n] = c
		names = append(names, n)
	}
	s.mu.Unlock()
	sort.Strings(names)
	// In parallel, so one dependency that hangs costs the timeout once
	// and the others are still reported; a check that ignores its context
	// is abandoned at the timeout rather than holding the request.
	type result struct {
		i   int
		err error
	}
	results := make(chan result, len(names))
	for i, n := range names {
		go func() { results <- result{i, checks[n](ctx)} }()
	}
	errs := make([]error, len(names))
	for i := range errs {
		errs[i] = errors.New("no answer within 2s")
	}
wait:
	for range names {
		select {
		case r := <-results:
			errs[r.i] = r.err
		case <-ctx.Done():
			break wait
		}
	}
	var b strings.Builder
	status := http.StatusOK
	for i, n := range names {
		if err := errs[i]; err != nil {
			status = http.StatusServiceUnavailable
			fmt.Fprintf(&b, "%s: %v\n", n, err)
		} else {
			fmt.Fprintf(&b, "%s: ok\n", n)
		}
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// Listen binds the address, so a port conflict fails start-up rather
// than surfacing later.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("admin listen %s: %w", s.addr, err)
	}
	s.ln = ln
	return nil
}

// Addr is the bound address (useful with port 0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Run serves until ctx is done.
func (s *Server) Run(ctx context.Context) error {
	if s.ln == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	srv := &http.Server{Handler: s.mux, ReadHeaderTimeout: min(5*time.Second, s.ReadTimeout),
		ReadTimeout: s.ReadTimeout, IdleTimeout: s.IdleTimeout}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(s.ln) }()
	s.logger.Info("admin endpoints serving", "addr", s.Addr(), "paths", "/metrics /healthz /readyz")
	select {
	case err := <-errc:
		return fmt.Errorf("admin server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("admin server shutdown: %w", err)
	}
	return nil
}
