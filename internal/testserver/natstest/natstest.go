// Package natstest runs a real NATS server with JetStream inside the test
// process, on a free loopback port with its store in a temp dir.
package natstest

import (
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is an embedded nats-server.
type Server struct {
	URL  string
	Dir  string
	opts server.Options
	srv  *server.Server
}

// Start runs a JetStream-enabled server until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, nil)
}

// StartWith runs a server like Start, after configure has changed its
// options: users, NKeys, operator mode (TrustedOperators with an
// AccountResolver), TLS. With TLSConfig set, URL has the tls:// scheme.
func StartWith(t testing.TB, configure func(*server.Options)) *Server {
	t.Helper()
	s := &Server{Dir: t.TempDir()}
	s.opts = server.Options{
		Host:      "127.0.0.1",
		Port:      server.RANDOM_PORT,
		JetStream: true,
		StoreDir:  s.Dir,
		NoLog:     true,
		NoSigs:    true,
	}
	if configure != nil {
		configure(&s.opts)
	}
	s.start(t)
	// Restarts keep the port the first start got, so clients reconnect.
	s.opts.Port = s.srv.Addr().(*net.TCPAddr).Port
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start(t testing.TB) {
	t.Helper()
	opts := s.opts
	srv, err := server.NewServer(&opts)
	if err != nil {
		t.Fatalf("natstest: new server: %v", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		t.Fatalf("natstest: server not ready within 10s")
	}
	s.srv = srv
	s.URL = srv.ClientURL()
}

// Stop shuts the server down; safe to call twice.
func (s *Server) Stop() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

// Restart starts a stopped server again, with the same port and store.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	s.start(t)
}
