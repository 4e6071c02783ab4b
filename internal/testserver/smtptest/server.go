// Package smtptest runs a real SMTP server on loopback for tests and records
// every message it accepts. It is built on github.com/emersion/go-smtp so
// clients are exercised against a genuine protocol implementation (EHLO,
// STARTTLS, AUTH, DATA dot-stuffing) rather than a mock.
package smtptest

import (
	"bytes"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Message is one message accepted by the server.
type Message struct {
	From string   // MAIL FROM reverse path
	To   []string // RCPT TO forward paths, in order
	Data []byte   // the message exactly as received, CRLF line endings

	// Began is when the server received MAIL FROM for this message and
	// Accepted when it replied to the end of DATA: [Began, Accepted] is the
	// send as the server saw it, so tests can tell which sends overlapped.
	Began, Accepted time.Time
}

// Server is a running test SMTP server. Addr, Host and Port say where to
// connect; everything else is reached through methods.
type Server struct {
	Addr string // "127.0.0.1:port"
	Host string // "127.0.0.1"
	Port int

	opts      options
	t         testing.TB
	cert      tls.Certificate // empty without TLS
	tlsConfig *tls.Config

	runMu sync.Mutex
	stop  func() // nil while stopped

	mu       sync.Mutex
	msgs     []Message
	conns    []net.Conn // every accepted connection, for counting and dropping
	failLeft int
	wake     chan struct{} // closed and replaced whenever state changes
	closed   bool          // guards t.Logf after cleanup
}

type options struct {
	user, pass  string
	auth        bool
	startTLS    bool
	implicitTLS bool
	failCode    int
	failCount   int
	delay       time.Duration
}

// Option configures a Server.
type Option func(*options)

// WithAuth requires clients to authenticate as user with pass before MAIL.
// PLAIN, LOGIN, CRAM-MD5 and XOAUTH2 (pass is the bearer token) are offered.
// Without WithTLS, AUTH is allowed in cleartext.
func WithAuth(user, pass string) Option {
	return func(o *options) { o.user, o.pass, o.auth = user, pass, true }
}

// WithTLS advertises STARTTLS using a self-signed certificate generated at
// start. AUTH is then only offered after STARTTLS, so a passing auth test
// also proves the client upgraded the connection.
func WithTLS() Option {
	return func(o *options) { o.startTLS = true }
}

// WithImplicitTLS makes the listener speak TLS from the first byte (SMTPS),
// with the same kind of self-signed certificate as WithTLS.
func WithImplicitTLS() Option {
	return func(o *options) { o.implicitTLS = true }
}

// WithFailures rejects the next n messages with the given SMTP reply code
// (e.g. 451 temporary, 550 permanent). The rejection is the reply to the
// end of DATA, which is where real servers reject content.
func WithFailures(code, n int) Option {
	return func(o *options) { o.failCode, o.failCount = code, n }
}

// WithDelay makes the server take d over every message after receiving
// its DATA and before replying, as a real relay does while it queues or
// scans the message. Sessions are delayed independently, so concurrent
// connections overlap as they would against a real server.
func WithDelay(d time.Duration) Option {
	return func(o *options) { o.delay = d }
}

// Start runs a server on 127.0.0.1 on a free port and stops it when the
// test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{t: t, wake: make(chan struct{})}
	for _, o := range opts {
		o(&s.opts)
	}
	s.failLeft = s.opts.failCount

	if s.opts.startTLS || s.opts.implicitTLS {
		cert, err := selfSignedCert()
		if err != nil {
			t.Fatalf("smtptest: %v", err)
		}
		s.cert = cert
		s.tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if err := s.listen("127.0.0.1:0"); err != nil {
		t.Fatalf("smtptest: %v", err)
	}
	t.Cleanup(func() {
		s.Stop()
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
	})
	return s
}

// listen starts serving on addr; s.Addr, Host and Port are set from what
// it got.
func (s *Server) listen(addr string) error {
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) {
		return &session{srv: s}, nil
	}))
	srv.Domain = "localhost"
	srv.ReadTimeout = 30 * time.Second
	srv.WriteTimeout = 30 * time.Second
	srv.ErrorLog = testLogger{s}
	if s.opts.startTLS {
		srv.TLSConfig = s.tlsConfig
	}
	// Cleartext AUTH only when the test asked for no TLS at all.
	srv.AllowInsecureAuth = !s.opts.startTLS

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	var l net.Listener = &countingListener{Listener: ln, s: s}
	if s.opts.implicitTLS {
		l = tls.NewListener(l, s.tlsConfig)
	}
	tcp := ln.Addr().(*net.TCPAddr)
	s.Addr, s.Host, s.Port = tcp.String(), tcp.IP.String(), tcp.Port

	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, net.ErrClosed) {
			s.logf("smtptest: serve: %v", err)
		}
	}()
	s.runMu.Lock()
	s.stop = func() {
		_ = srv.Close()
		// Close only knows listeners Serve has registered; if the test was
		// quick enough, Serve may not have got that far yet.
		_ = l.Close()
		<-done
		s.DropConnections() // any go-smtp had not registered yet
	}
	s.runMu.Unlock()
	return nil
}

// Stop closes the listener and every connection, as a mail server that
// goes down would: clients get connection refused until Restart. Messages
// received so far stay readable. Safe to call twice.
func (s *Server) Stop() {
	s.runMu.Lock()
	stop := s.stop
	s.stop = nil
	s.runMu.Unlock()
	if stop != nil {
		stop()
	}
}

// Restart stops the server if it runs and listens again on the same
// host:port with the same options and certificate.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	// A port just released can be taken by another process before we bind
	// it again; retry briefly rather than fail at the first refusal.
	var err error
	for i := 0; i < 50; i++ {
		if err = s.listen(s.Addr); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("smtptest: restart on %s: %v", s.Addr, err)
}

// CertPEM returns the server's certificate in PEM, for a client to trust
// as its CA (it is self-signed); nil without WithTLS or WithImplicitTLS.
func (s *Server) CertPEM() []byte {
	if len(s.cert.Certificate) == 0 {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.cert.Certificate[0]})
}

// Messages returns a copy of the messages accepted so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, len(s.msgs))
	for i, m := range s.msgs {
		out[i] = Message{From: m.From, To: slices.Clone(m.To), Data: bytes.Clone(m.Data), Began: m.Began, Accepted: m.Accepted}
	}
	return out
}

// Connections reports how many TCP connections the server has accepted.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// DropConnections closes every client connection without a word, as a
// server restart or idle timeout would, so tests can check that clients
// notice and reconnect.
func (s *Server) DropConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		_ = c.Close()
	}
}

// WaitForMessages waits until at least n messages have been accepted and
// returns them, failing the test if that takes longer than timeout.
func (s *Server) WaitForMessages(t testing.TB, n int, timeout time.Duration) []Message {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		got, wake := len(s.msgs), s.wake
		s.mu.Unlock()
		if got >= n {
			return s.Messages()
		}
		select {
		case <-wake:
		case <-deadline.C:
			t.Fatalf("smtptest: got %d messages after %v, want %d", got, timeout, n)
			return nil
		}
	}
}

// changed wakes waiters; callers hold s.mu.
func (s *Server) changed() {
	close(s.wake)
	s.wake = make(chan struct{})
}

func (s *Server) record(m Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, m)
	s.changed()
}

// takeFailure returns the reply code to reject the current message with,
// or 0 to accept it.
func (s *Server) takeFailure() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failLeft <= 0 {
		return 0
	}
	s.failLeft--
	return s.opts.failCode
}

// logf logs to the test until cleanup; holding s.mu while logging makes
// sure no line is written after the test has completed, which would panic.
func (s *Server) logf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.t.Logf(format, args...)
	}
}

// session is one SMTP session (go-smtp starts a new one after STARTTLS).
type session struct {
	srv    *Server
	authed bool
	from   string
	to     []string
	began  time.Time
}

func (ss *session) AuthMechanisms() []string {
	if !ss.srv.opts.auth {
		return nil
	}
	return []string{sasl.Plain, sasl.Login, "CRAM-MD5", "XOAUTH2"}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	o := ss.srv.opts
	check := func(user, pass string) error {
		if user != o.user || pass != o.pass {
			return smtp.ErrAuthFailed // 535, not go-smtp's default 454
		}
		ss.authed = true
		return nil
	}
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(_, user, pass string) error { return check(user, pass) }), nil
	case sasl.Login:
		return &loginServer{check: check}, nil
	case "CRAM-MD5":
		return newCRAMMD5Server(o.user, o.pass, func() { ss.authed = true }), nil
	case "XOAUTH2":
		return &xoauth2Server{check: check}, nil
	}
	return nil, smtp.ErrAuthUnknownMechanism
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.srv.opts.auth && !ss.authed {
		return smtp.ErrAuthRequired
	}
	ss.from, ss.began = from, time.Now()
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if d := ss.srv.opts.delay; d > 0 {
		time.Sleep(d)
	}
	if code := ss.srv.takeFailure(); code != 0 {
		return &smtp.SMTPError{
			Code:         code,
			EnhancedCode: smtp.EnhancedCode{code / 100, 0, 0},
			Message:      fmt.Sprintf("smtptest: simulated failure %d", code),
		}
	}
	ss.srv.record(Message{From: ss.from, To: slices.Clone(ss.to), Data: data, Began: ss.began, Accepted: time.Now()})
	return nil
}

func (ss *session) Reset() { ss.from, ss.to, ss.began = "", nil, time.Time{} }

func (ss *session) Logout() error { return nil }

// countingListener counts accepted connections so tests can assert that a
// client reuses one connection for several messages.
type countingListener struct {
	net.Listener
	s *Server
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.s.mu.Lock()
		l.s.conns = append(l.s.conns, c)
		l.s.changed()
		l.s.mu.Unlock()
	}
	return c, err
}

// testLogger routes go-smtp's internal error log to the test log instead of
// stderr.
type testLogger struct{ s *Server }

func (l testLogger) Printf(format string, v ...any) { l.s.logf("smtptest: "+format, v...) }
func (l testLogger) Println(v ...any)               { l.s.logf("smtptest: %s", fmt.Sprint(v...)) }
