// Package mail builds pagewatch's notification emails and delivers them,
// either over SMTP or into a directory of .eml files.
package mail

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/pagewatch/pagewatch/pipeline/notify"
	gomail "github.com/wneessen/go-mail"
)

// transport delivers a finished message.
type transport interface {
	send(ctx context.Context, key string, m *gomail.Msg) error
	close() error
}

// Sender renders notifications and hands them to the configured transport.
// It is safe for concurrent use; SMTP sends are serialised over one
// connection.
type Sender struct {
	render    *renderer
	transport transport
	logger    *slog.Logger
}

// New validates cfg and prepares a Sender. It does not connect: the SMTP
// connection is opened by the first Send, so a mail server that is down at
// start-up delays notifications instead of stopping the program.
func New(cfg Config, logger *slog.Logger) (*Sender, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "mail", "transport", cfg.Transport)

	r, err := newRenderer(cfg.From)
	if err != nil {
		return nil, err
	}
	var t transport
	switch cfg.Transport {
	case TransportSMTP:
		t, err = newSMTPTransport(cfg.SMTP, logger)
	default: // Validate admits only file besides smtp
		t, err = newFileTransport(cfg.File)
	}
	if err != nil {
		return nil, err
	}
	return &Sender{render: r, transport: t, logger: logger}, nil
}

// Send renders n and delivers it. Its error says, through its Permanent and
// SMTPCode methods (see IsPermanent and SMTPCode), whether a retry can
// help: the worker branches on those without importing this package. Sending the same Key twice sends a second copy
// with the same Message-ID (the file transport overwrites instead).
func (s *Sender) Send(ctx context.Context, n notify.Notification) error {
	if err := s.send(ctx, n); err != nil {
		return &SendError{err: fmt.Errorf("send %s to %d recipients: %w", n.Key, len(n.Recipients), err)}
	}
	s.logger.Debug("notification sent", "key", n.Key, "recipients", len(n.Recipients))
	return nil
}

func (s *Sender) send(ctx context.Context, n notify.Notification) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(n.Links) > 0 && len(n.Recipients) > 1 {
		return s.sendEach(ctx, n) // links.go: a copy per recipient
	}
	m, err := s.render.message(n)
	if err != nil {
		return err
	}
	return s.transport.send(ctx, n.Key, m)
}

// Close releases the transport (QUIT on an open SMTP connection). It waits
// for a Send in progress; cancel that Send's context to hurry it up.
func (s *Sender) Close() error {
	if err := s.transport.close(); err != nil {
		return fmt.Errorf("close mail sender: %w", err)
	}
	return nil
}
