package mail_test

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/internal/syncbuf"
	"github.com/pagewatch/pagewatch/internal/testserver/smtptest"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

const tlsTestPassword = "smtp-pw-9b2e51-hunter4"

// writeCA writes the server's certificate where mail.smtp.ca_file points.
func writeCA(t *testing.T, srv *smtptest.Server) string {
	t.Helper()
	pem := srv.CertPEM()
	if len(pem) == 0 {
		t.Fatal("smtptest server has no certificate")
	}
	path := filepath.Join(t.TempDir(), "smtp-ca.pem")
	if err := os.WriteFile(path, pem, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// sendVerified sends one notification with certificate checks on and
// returns everything the sender logged and the error.
func sendVerified(t *testing.T, cfg mail.Config) (string, error) {
	t.Helper()
	cfg.SMTP.InsecureSkipVerify = false
	cfg.SMTP.Password = secret.New(tlsTestPassword)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	var logs syncbuf.Buffer
	s, err := mail.New(cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Send(context.Background(), testNotification())
	_ = s.Close()
	return logs.String(), err
}

func checkNoSecret(t *testing.T, err error, logs string) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), tlsTestPassword) {
		t.Errorf("error shows the password: %v", err)
	}
	if strings.Contains(logs, tlsTestPassword) {
		t.Errorf("log shows the password:\n%s", logs)
	}
}

func TestSMTPCAFile(t *testing.T) {
	for _, mode := range []string{mail.TLSMandatory, mail.TLSImplicit} {
		t.Run(mode, func(t *testing.T) {
			opt := smtptest.WithTLS()
			if mode == mail.TLSImplicit {
				opt = smtptest.WithImplicitTLS()
			}
			srv := smtptest.Start(t, opt, smtptest.WithAuth("user", tlsTestPassword))
			cfg := smtpConfig(srv)
			cfg.SMTP.TLS = mode
			cfg.SMTP.CAFile = writeCA(t, srv)

			logs, err := sendVerified(t, cfg)
			if err != nil {
				t.Fatalf("Send trusting ca_file: %v", err)
			}
			checkNoSecret(t, err, logs)
			srv.WaitForMessages(t, 1, wait)

			// The system roots do not know a self-signed certificate.
			cfg.SMTP.CAFile = ""
			logs, err = sendVerified(t, cfg)
			var verify *tls.CertificateVerificationError
			if !errors.As(err, &verify) {
				t.Fatalf("Send with system roots: err = %v, want a certificate error", err)
			}
			t.Logf("system roots: %v", err)
			checkNoSecret(t, err, logs)
			if n := len(srv.Messages()); n != 1 {
				t.Fatalf("%d messages, want 1", n)
			}
		})
	}
}

func TestSMTPCAFileValidation(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithTLS())
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, []byte("nothing here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func(*mail.SMTPConfig)
		want string
	}{
		{"missing", func(c *mail.SMTPConfig) { c.CAFile = filepath.Join(dir, "nope.pem") },
			"mail.smtp.ca_file: open " + filepath.Join(dir, "nope.pem") + ": no such file"},
		{"no certificates", func(c *mail.SMTPConfig) { c.CAFile = empty },
			"mail.smtp.ca_file: " + empty + ": no PEM certificates"},
		{"with tls none", func(c *mail.SMTPConfig) { c.CAFile, c.TLS = writeCA(t, srv), mail.TLSNone },
			`mail.smtp.ca_file: set while mail.smtp.tls is "none"`},
		{"with insecure_skip_verify", func(c *mail.SMTPConfig) { c.CAFile, c.InsecureSkipVerify = writeCA(t, srv), true },
			"mail.smtp.insecure_skip_verify: set together with mail.smtp.ca_file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := smtpConfig(srv)
			cfg.SMTP.InsecureSkipVerify = false
			c.edit(&cfg.SMTP)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate = %v, want %q", err, c.want)
			}
			if _, err := mail.New(cfg, nil); err == nil {
				t.Fatal("New accepted it")
			}
		})
	}
	// On the file transport the smtp block is not checked.
	cfg := smtpConfig(srv)
	cfg.Transport = mail.TransportFile
	cfg.SMTP.CAFile = empty
	if err := cfg.Validate(); err != nil {
		t.Fatalf("file transport: %v", err)
	}
}
