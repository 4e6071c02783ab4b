package mail

import (
	"errors"
	"fmt"
	netmail "net/mail"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/config/tlsconfig"
)

// Transport names accepted in mail.transport.
const (
	TransportFile = "file"
	TransportSMTP = "smtp"
)

// Config is the mail: section of the configuration file.
type Config struct {
	Transport string     `yaml:"transport"` // "file" (default, for the demo) or "smtp"
	From      string     `yaml:"from"`
	File      FileConfig `yaml:"file"`
	SMTP      SMTPConfig `yaml:"smtp"`
}

// FileConfig configures the file transport, which drops each message into
// a directory as an .eml file instead of sending it.
type FileConfig struct {
	Dir string `yaml:"dir"`
}

// SMTPConfig configures delivery to an SMTP submission server.
type SMTPConfig struct {
	Host string `yaml:"host"`
	Port int    `yaml:"port"`
	// TLS is "mandatory" (STARTTLS required), "opportunistic" (STARTTLS if
	// offered), "implicit" (SMTPS, TLS from the first byte) or "none".
	TLS string `yaml:"tls"`
	// Auth is "none", "plain", "login", "cram-md5" or "xoauth2"; for
	// xoauth2 the password holds the OAuth2 access token.
	Auth     string       `yaml:"auth"`
	Username string       `yaml:"username"`
	Password secret.Value `yaml:"password"`
	// Timeout bounds connecting and each SMTP command.
	Timeout time.Duration `yaml:"timeout"`
	// HELO is the name sent in EHLO; empty means the local hostname.
	HELO string `yaml:"helo"`
	// CAFile is a PEM bundle of the CAs to trust for the server's
	// certificate instead of the system roots, for a relay with a
	// certificate from a private CA. Used by STARTTLS and implicit TLS.
	CAFile string `yaml:"ca_file"`
	// InsecureSkipVerify disables certificate checks. Only for tests and
	// self-signed lab servers: it makes TLS useless against an attacker.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// tlsBlock is the TLS side of the SMTP settings in the shape the nats and
// clickhouse sections use, so the CA file is checked and loaded the same way.
func (s SMTPConfig) tlsBlock() tlsconfig.Config {
	return tlsconfig.Config{
		Enabled:            true,
		CAFile:             s.CAFile,
		ServerName:         s.Host,
		InsecureSkipVerify: s.InsecureSkipVerify,
	}
}

// SMTP TLS modes accepted in mail.smtp.tls.
const (
	TLSMandatory     = "mandatory"
	TLSOpportunistic = "opportunistic"
	TLSImplicit      = "implicit"
	TLSNone          = "none"
)

// SMTP auth mechanisms accepted in mail.smtp.auth.
const (
	AuthNone    = "none"
	AuthPlain   = "plain"
	AuthLogin   = "login"
	AuthCRAMMD5 = "cram-md5"
	AuthXOAUTH2 = "xoauth2"
)

// DefaultConfig returns the configuration used for keys the file leaves out.
// The file transport is the default so the demo works without a mail server.
func DefaultConfig() Config {
	return Config{
		Transport: TransportFile,
		From:      "pagewatch@localhost",
		File:      FileConfig{Dir: "outbox"},
		SMTP: SMTPConfig{
			Port:    587,
			TLS:     TLSMandatory,
			Auth:    AuthNone,
			Timeout: 10 * time.Second,
		},
	}
}

// Validate reports every problem at once, each naming its full key, so a
// user fixes the file in one round trip.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("mail.%s: %s", key, fmt.Sprintf(format, args...)))
	}

	switch c.Transport {
	case TransportFile, TransportSMTP:
	default:
		bad("transport", "must be %q or %q, got %q", TransportFile, TransportSMTP, c.Transport)
	}
	if _, err := netmail.ParseAddress(c.From); err != nil {
		bad("from", "invalid address %q: %v", c.From, err)
	}

	// Only the section in use is checked: an smtp block left half-filled
	// while running on the file transport should not stop the program.
	switch c.Transport {
	case TransportFile:
		if strings.TrimSpace(c.File.Dir) == "" {
			bad("file.dir", "must not be empty")
		}
	case TransportSMTP:
		if err := c.SMTP.Password.Err(); err != nil {
			bad("smtp.password", "%v", err)
		}
		c.SMTP.validate(bad)
		if c.SMTP.CAFile != "" {
			if c.SMTP.TLS == TLSNone {
				bad("smtp.ca_file", "set while mail.smtp.tls is %q", TLSNone)
			} else {
				errs = append(errs, c.SMTP.tlsBlock().Validate("mail.smtp"))
			}
		}
	}
	return errors.Join(errs...)
}

func (s SMTPConfig) validate(bad func(key, format string, args ...any)) {
	if strings.TrimSpace(s.Host) == "" {
		bad("smtp.host", "must not be empty")
	}
	if s.Port < 1 || s.Port > 65535 {
		bad("smtp.port", "must be 1..65535, got %d", s.Port)
	}
	switch s.TLS {
	case TLSMandatory, TLSOpportunistic, TLSImplicit, TLSNone:
	default:
		bad("smtp.tls", "must be one of %q, %q, %q, %q, got %q",
			TLSMandatory, TLSOpportunistic, TLSImplicit, TLSNone, s.TLS)
	}
	switch s.Auth {
	case AuthNone:
	case AuthPlain, AuthLogin, AuthCRAMMD5, AuthXOAUTH2:
		if s.Username == "" {
			bad("smtp.username", "must be set when mail.smtp.auth is %q", s.Auth)
		}
		if !s.Password.IsSet() && s.Password.Err() == nil { // else Validate reported why
			bad("smtp.password", "must be set when mail.smtp.auth is %q", s.Auth)
		}
	default:
		bad("smtp.auth", "must be one of %q, %q, %q, %q, %q, got %q",
			AuthNone, AuthPlain, AuthLogin, AuthCRAMMD5, AuthXOAUTH2, s.Auth)
	}
	if s.Timeout <= 0 {
		bad("smtp.timeout", "must be positive, got %v", s.Timeout)
	}
	if strings.ContainsAny(s.HELO, " \t\r\n") {
		bad("smtp.helo", "must be a single hostname, got %q", s.HELO)
	}
}
