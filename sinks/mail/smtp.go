package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"

	gomail "github.com/wneessen/go-mail"
	"github.com/wneessen/go-mail/smtp"
)

// smtpTransport keeps one SMTP connection open and reuses it for every
// message, redialling when it is found dead. It drives go-mail's
// DialToSMTPClientWithContext / SendWithSMTPClient pair rather than
// Client.DialWithContext / Client.Send so that it owns the connection and
// can always close it — go-mail leaves the socket open when the handshake
// fails after connecting (e.g. STARTTLS refused).
type smtpTransport struct {
	client *gomail.Client
	addr   string
	logger *slog.Logger

	mu     sync.Mutex   // one SMTP conversation at a time
	conn   *smtp.Client // nil until the first send and after a failure
	closed bool

	rawMu sync.Mutex
	raw   net.Conn // TCP socket under conn; closing it aborts any I/O at once
}

func newSMTPTransport(cfg SMTPConfig, logger *slog.Logger) (*smtpTransport, error) {
	t := &smtpTransport{
		addr:   net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)),
		logger: logger,
	}
	tlsConfig, err := cfg.tlsBlock().Build()
	if err != nil {
		return nil, fmt.Errorf("mail.smtp.%w", err)
	}
	opts := []gomail.Option{
		gomail.WithPort(cfg.Port),
		gomail.WithTimeout(cfg.Timeout),
		gomail.WithTLSConfig(tlsConfig),
		gomail.WithDialContextFunc(t.dialFunc(tlsConfig, cfg.TLS == TLSImplicit)),
	}
	switch cfg.TLS {
	case TLSMandatory:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case TLSOpportunistic:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	case TLSNone:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	case TLSImplicit:
		// With a custom dial function go-mail does not wrap the socket in
		// TLS itself (dialFunc does); WithSSL still stops it from trying
		// STARTTLS inside the TLS session.
		opts = append(opts, gomail.WithSSL())
	}
	if cfg.Auth != AuthNone {
		opts = append(opts,
			gomail.WithSMTPAuth(authType(cfg.Auth)),
			gomail.WithUsername(cfg.Username),
			gomail.WithPassword(cfg.Password.Reveal()))
	}
	if cfg.HELO != "" {
		opts = append(opts, gomail.WithHELO(cfg.HELO))
	}
	client, err := gomail.NewClient(cfg.Host, opts...)
	if err != nil {
		return nil, fmt.Errorf("smtp client for %s: %w", t.addr, err)
	}
	t.client = client
	return t, nil
}

// authType maps a validated mail.smtp.auth value to go-mail. go-mail's
// PLAIN and LOGIN refuse to send the password over a cleartext connection
// to a non-local host, which is why tls: none rarely pairs with them.
func authType(name string) gomail.SMTPAuthType {
	switch name {
	case AuthPlain:
		return gomail.SMTPAuthPlain
	case AuthLogin:
		return gomail.SMTPAuthLogin
	case AuthCRAMMD5:
		return gomail.SMTPAuthCramMD5
	case AuthXOAUTH2:
		return gomail.SMTPAuthXOAUTH2
	}
	return gomail.SMTPAuthNoAuth
}

// dialFunc connects and remembers the TCP socket so a cancelled context can
// close it. For implicit TLS the handshake is done here on that socket.
func (t *smtpTransport) dialFunc(tlsConfig *tls.Config, implicit bool) gomail.DialContextFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		t.setRaw(raw)
		// A cancellation that fired before setRaw found nothing to close.
		if err := ctx.Err(); err != nil {
			t.abort()
			return nil, err
		}
		if !implicit {
			return raw, nil
		}
		conn := tls.Client(raw, tlsConfig)
		if err := conn.HandshakeContext(ctx); err != nil {
			_ = raw.Close()
			return nil, fmt.Errorf("tls handshake: %w", err)
		}
		return conn, nil
	}
}

func (t *smtpTransport) setRaw(c net.Conn) {
	t.rawMu.Lock()
	defer t.rawMu.Unlock()
	t.raw = c
}

// abort closes the socket; safe to call from any goroutine at any time.
func (t *smtpTransport) abort() {
	t.rawMu.Lock()
	defer t.rawMu.Unlock()
	if t.raw != nil {
		_ = t.raw.Close()
		t.raw = nil
	}
}

func (t *smtpTransport) send(ctx context.Context, _ string, m *gomail.Msg) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errors.New("mail sender is closed")
	}
	// go-mail's send path takes no context, only per-command deadlines;
	// closing the socket is what makes cancellation prompt.
	stop := context.AfterFunc(ctx, t.abort)
	defer stop()

	err := t.sendLocked(ctx, m)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w: %w", context.Cause(ctx), err)
	}
	return err
}

func (t *smtpTransport) sendLocked(ctx context.Context, m *gomail.Msg) error {
	reused := t.conn != nil
	if !reused {
		if err := t.connect(ctx); err != nil {
			return err
		}
	}
	err := t.client.SendWithSMTPClient(t.conn, m)
	if err == nil {
		return nil
	}
	t.afterFailure(err)
	if !reused || !isStale(err) || ctx.Err() != nil {
		return err
	}
	// go-mail found the idle connection dead (server timeout or restart)
	// before sending MAIL FROM, so nothing was transmitted and one resend
	// on a fresh connection cannot deliver the message twice.
	t.logger.Debug("smtp connection went stale, redialling", "addr", t.addr)
	if err := t.connect(ctx); err != nil {
		return err
	}
	if err := t.client.SendWithSMTPClient(t.conn, m); err != nil {
		t.afterFailure(err)
		return err
	}
	return nil
}

func (t *smtpTransport) connect(ctx context.Context) error {
	conn, err := t.client.DialToSMTPClientWithContext(ctx)
	if err != nil {
		t.abort() // go-mail does not close the socket on handshake errors
		return fmt.Errorf("connect to %s: %w", t.addr, err)
	}
	t.conn = conn
	t.logger.Debug("smtp connected", "addr", t.addr)
	return nil
}

// afterFailure decides whether the connection survives a failed send. After a
// server reply (4xx/5xx) the session is fine once reset — go-mail does not
// RSET after every kind of rejection, so we do. Without a reply the state
// of the conversation is unknown and the connection is dropped.
func (t *smtpTransport) afterFailure(err error) {
	if SMTPCode(err) != 0 && t.client.ResetWithSMTPClient(t.conn) == nil {
		return
	}
	t.drop()
}

func (t *smtpTransport) drop() {
	t.abort()
	t.conn = nil
}

func isStale(err error) bool {
	var se *gomail.SendError
	return errors.As(err, &se) && se.Reason == gomail.ErrConnCheck
}

func (t *smtpTransport) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	if t.conn == nil {
		return nil
	}
	err := t.client.CloseWithSMTPClient(t.conn) // QUIT
	t.drop()
	if err != nil {
		return fmt.Errorf("quit %s: %w", t.addr, err)
	}
	return nil
}
