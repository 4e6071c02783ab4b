package bus

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Bus is a NATS connection with JetStream, plus the names derived from the config.
type Bus struct {
	Conn *nats.Conn
	JS   jetstream.JetStream
	cfg  Config
	log  *slog.Logger
	// waits are the creations of streams and buckets retrying now.
	waits *creations
}

// Connect dials NATS. The client keeps reconnecting forever: JetStream
// is the pipeline's buffer, and a daemon that gave up on it would only be
// restarted to try again. Errors that no retry can fix (refused
// credentials, an untrusted certificate, TLS on one side only) end the
// first connection attempt instead, so a misconfigured daemon stops at
// start-up with the reason.
func Connect(ctx context.Context, cfg Config, name string, logger *slog.Logger) (*Bus, error) {
	var attempt lastError
	opts := []nats.Option{
		nats.Name(name),
		nats.Timeout(cfg.ConnectTimeout),
		nats.PingInterval(cfg.PingInterval),
		nats.MaxPingsOutstanding(2),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil: our own Close
				logger.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			logger.Info("nats reconnected", "url", c.ConnectedUrlRedacted())
		}),
		// Failed attempts, the first connection's included: kept so the
		// start-up wait can tell a server that is down from one that says no.
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) { attempt.set(err) }),
	}
	if cfg.User != "" {
		opts = append(opts, nats.UserInfo(cfg.User, cfg.Password.Reveal()))
	}
	if cfg.Token.IsSet() {
		opts = append(opts, nats.Token(cfg.Token.Reveal()))
	}
	if cfg.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	if cfg.NkeySeedFile != "" {
		opt, err := nats.NkeyOptionFromSeed(cfg.NkeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("nats.nkey_seed_file: %s: %w", cfg.NkeySeedFile, err)
		}
		opts = append(opts, opt)
	}
	tlsCfg, err := cfg.TLS.Build()
	if err != nil {
		return nil, fmt.Errorf("nats.tls.%w", err)
	}
	if tlsCfg != nil {
		// An empty ServerName is filled by nats.go with each server's host.
		opts = append(opts, nats.Secure(tlsCfg))
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to nats %s: %w", redactURL(cfg.URL), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	b := &Bus{Conn: nc, JS: js, cfg: cfg, log: logger, waits: &creations{}}
	// RetryOnFailedConnect returns before the first connection; wait for it
	// so start-up errors surface here rather than as timeouts later.
	warnAt := time.Now().Add(cfg.ConnectTimeout)
	for !nc.IsConnected() {
		// Retries that fail inside the handshake reach no handler; the
		// connection's last error has them.
		attempt.set(nc.LastError())
		last := attempt.get()
		if nc.IsClosed() || permanent(last) {
			nc.Close()
			if last == nil {
				last = nats.ErrConnectionClosed
			}
			return nil, fmt.Errorf("connect to nats %s: %w", redactURL(cfg.URL), last)
		}
		if !warnAt.IsZero() && time.Now().After(warnAt) {
			logger.Warn("nats not reachable yet; still trying", "url", redactURL(cfg.URL), "err", last)
			warnAt = time.Time{}
		}
		select {
		case <-ctx.Done():
			nc.Close()
			if last != nil {
				return nil, fmt.Errorf("connect to nats %s: %w (last attempt: %w)", redactURL(cfg.URL), ctx.Err(), last)
			}
			return nil, fmt.Errorf("connect to nats %s: %w", redactURL(cfg.URL), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return b, nil
}

// permanent reports errors that another attempt against the same server
// with the same configuration would only repeat.
func permanent(err error) bool {
	if err == nil {
		return false
	}
	var verify *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	// A TLS alert from the server: it refused our certificate (or lack of
	// one), our CA or our TLS version. crypto/tls reports a received alert
	// as a net.OpError with this Op.
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" {
		return true
	}
	return errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) ||
		errors.Is(err, nats.ErrAuthRevoked) || errors.Is(err, nats.ErrAccountAuthExpired) ||
		errors.Is(err, nats.ErrSecureConnRequired) || errors.Is(err, nats.ErrSecureConnWanted) ||
		errors.As(err, &verify) || errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid)
}

// lastError is the most recent error of a connection attempt, written by
// nats.go's callback goroutine and read by Connect.
type lastError struct {
	mu  sync.Mutex
	err error
}

func (l *lastError) set(err error) {
	if err == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.err = err
}

func (l *lastError) get() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}
