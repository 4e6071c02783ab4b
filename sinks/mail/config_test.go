package mail_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

func TestDefaultConfigIsValid(t *testing.T) {
	cfg := mail.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
	if cfg.Transport != "file" || cfg.File.Dir != "outbox" || cfg.SMTP.Port != 587 ||
		cfg.SMTP.TLS != "mandatory" || cfg.SMTP.Auth != "none" || cfg.SMTP.Timeout != 10*time.Second {
		t.Errorf("unexpected defaults: %+v", cfg)
	}
}

func TestValidateNamesKeys(t *testing.T) {
	smtpBase := func() mail.Config {
		cfg := mail.DefaultConfig()
		cfg.Transport = mail.TransportSMTP
		cfg.SMTP.Host = "smtp.example.com"
		return cfg
	}
	tests := []struct {
		name   string
		mutate func(*mail.Config)
		want   []string
	}{
		{"transport", func(c *mail.Config) { c.Transport = "x" },
			[]string{`mail.transport: must be "file" or "smtp", got "x"`}},
		{"from", func(c *mail.Config) { c.From = "not an address" },
			[]string{`mail.from: invalid address "not an address"`}},
		{"from header injection", func(c *mail.Config) { c.From = "a@example.com\r\nBcc: b@example.com" },
			[]string{`mail.from: invalid address`}},
		{"file dir", func(c *mail.Config) { c.File.Dir = " " },
			[]string{`mail.file.dir: must not be empty`}},
		{"port", func(c *mail.Config) { *c = smtpBase(); c.SMTP.Port = 0 },
			[]string{`mail.smtp.port: must be 1..65535, got 0`}},
		{"host", func(c *mail.Config) { *c = smtpBase(); c.SMTP.Host = "" },
			[]string{`mail.smtp.host: must not be empty`}},
		{"tls", func(c *mail.Config) { *c = smtpBase(); c.SMTP.TLS = "starttls" },
			[]string{`mail.smtp.tls: must be one of`, `got "starttls"`}},
		{"auth", func(c *mail.Config) { *c = smtpBase(); c.SMTP.Auth = "md5" },
			[]string{`mail.smtp.auth: must be one of`, `got "md5"`}},
		{"auth without credentials", func(c *mail.Config) { *c = smtpBase(); c.SMTP.Auth = "plain" },
			[]string{`mail.smtp.username: must be set`, `mail.smtp.password: must be set`}},
		{"timeout", func(c *mail.Config) { *c = smtpBase(); c.SMTP.Timeout = 0 },
			[]string{`mail.smtp.timeout: must be positive, got 0s`}},
		{"helo", func(c *mail.Config) { *c = smtpBase(); c.SMTP.HELO = "a b" },
			[]string{`mail.smtp.helo:`}},
		{"all at once", func(c *mail.Config) {
			*c = smtpBase()
			c.From, c.SMTP.Port, c.SMTP.TLS = "", 70000, ""
		}, []string{`mail.from:`, `mail.smtp.port: must be 1..65535, got 70000`, `mail.smtp.tls:`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mail.DefaultConfig()
			tt.mutate(&cfg)
			err := cfg.Validate()
			if err == nil {
				t.Fatal("Validate() = nil")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if _, err := mail.New(cfg, nil); err == nil {
				t.Error("New accepted an invalid config")
			}
		})
	}
}

func TestValidateIgnoresUnusedSection(t *testing.T) {
	cfg := mail.DefaultConfig() // file transport
	cfg.SMTP.Port = 0
	if err := cfg.Validate(); err != nil {
		t.Errorf("smtp section checked while transport is file: %v", err)
	}
}

func TestValidateDoesNotLeakPassword(t *testing.T) {
	cfg := mail.DefaultConfig()
	cfg.Transport = mail.TransportSMTP
	cfg.SMTP.Auth = "bogus"
	cfg.SMTP.Password = secret.New("hunter2")
	if err := cfg.Validate(); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Validate() = %v", err)
	}
}
