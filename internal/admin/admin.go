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
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Check reports whether one dependency is usable.
type Check func(ctx context.Context) error

// Server is the admin HTTP server.
type Server struct {
	addr   string
	mux    *http.ServeMux
	checks map[string]Check
	logger *slog.Logger
	ln     net.Listener
}

// New returns a server for addr (host:port) exposing reg.
func New(addr string, reg *prometheus.Registry, checks map[string]Check, logger *slog.Logger) *Server {
	s := &Server{addr: addr, mux: http.NewServeMux(), checks: checks, logger: logger}
	s.mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	s.mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	s.mux.HandleFunc("/readyz", s.ready)
	return s
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	names := make([]string, 0, len(s.checks))
	for n := range s.checks {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	status := http.StatusOK
	for _, n := range names {
		if err := s.checks[n](ctx); err != nil {
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
	srv := &http.Server{Handler: s.mux, ReadHeaderTimeout: 5 * time.Second}
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
