package clickhouse_test

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/config/tlsconfig"
	"github.com/pagewatch/pagewatch/internal/syncbuf"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/internal/testserver/testcert"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

// TestTLSAndPassword runs against ClickHouse's secure native port with a
// password user, the way a production deploy connects.
func TestTLSAndPassword(t *testing.T) {
	const pass = "ch-pw-41d9e7-hunter3"
	srv := clickhousetest.StartWith(t, clickhousetest.Options{
		TLS:   true,
		Users: []clickhousetest.User{{Name: "pagewatch", Password: pass}},
	})
	var logs syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := clickhouse.DefaultConfig()
	cfg.Addr = []string{srv.SecureAddr}
	cfg.Database = "pw_tls"
	cfg.Username = "pagewatch"
	cfg.Password = secret.New(pass)
	cfg.TLS = tlsconfig.Config{Enabled: true, CAFile: srv.CAFile}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}

	open := func(cfg clickhouse.Config) (*clickhouse.Client, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		c, err := clickhouse.Open(ctx, cfg, logger)
		if err == nil {
			t.Cleanup(func() { c.Close() })
		}
		return c, err
	}

	c, err := open(cfg)
	if err != nil {
		t.Fatalf("TLS with password: %v", err)
	}
	ctx := context.Background()
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatalf("migrate over TLS: %v", err)
	}
	if n, err := c.Hits().HitCount(ctx); err != nil || n != 0 {
		t.Fatalf("HitCount = %d, %v", n, err)
	}
	// The database was created over TLS by that user.
	if got := srv.Query(t, "SELECT count() FROM system.databases WHERE name = 'pw_tls'"); got != "1\n" {
		t.Fatalf("database pw_tls: %q", got)
	}

	// The loader's inserts over HTTPS (clickhouse.http_addr with TLS on),
	// checked against the same CA and password.
	hcfg := cfg
	hcfg.HTTPAddr = []string{srv.HTTPSAddr}
	hc, err := open(hcfg)
	if err != nil {
		t.Fatalf("open with an HTTPS insert address: %v", err)
	}
	if err := hc.Hits().InsertHits(ctx, batchesAt(time.Now().UTC().Add(-10*time.Minute))); err != nil {
		t.Fatalf("insert over HTTPS: %v", err)
	}
	if n, err := hc.Hits().HitCount(ctx); err != nil || n != 125 {
		t.Fatalf("after the insert over HTTPS, HitCount = %d, %v; want 125", n, err)
	}

	failures := []struct {
		name string
		edit func(*clickhouse.Config)
		want func(error) bool
	}{
		{"wrong password", func(c *clickhouse.Config) { c.Password = secret.New("not-" + pass) },
			func(err error) bool { return strings.Contains(err.Error(), "Wrong password") }},
		{"no password", func(c *clickhouse.Config) { c.Password = secret.Value{} },
			func(err error) bool { return strings.Contains(err.Error(), "Password required") }},
		// The server drops a client that does not start with a TLS handshake.
		{"plain connection to the secure port", func(c *clickhouse.Config) { c.TLS = tlsconfig.Config{} },
			func(err error) bool { return strings.Contains(err.Error(), "handshake") }},
		{"TLS to the plain port", func(c *clickhouse.Config) { c.Addr = []string{srv.Addr} },
			func(err error) bool { return strings.Contains(err.Error(), "tls") }},
		{"system roots", func(c *clickhouse.Config) { c.TLS.CAFile = "" },
			func(err error) bool { var v *tls.CertificateVerificationError; return errors.As(err, &v) }},
		{"another CA", func(c *clickhouse.Config) { c.TLS.CAFile = otherCA(t) },
			func(err error) bool { var v *tls.CertificateVerificationError; return errors.As(err, &v) }},
		{"server name not in the certificate", func(c *clickhouse.Config) { c.TLS.ServerName = "db.example.com" },
			func(err error) bool {
				var v *tls.CertificateVerificationError
				return errors.As(err, &v) && strings.Contains(err.Error(), "db.example.com")
			}},
	}
	for _, f := range failures {
		t.Run(f.name, func(t *testing.T) {
			cfg := cfg
			f.edit(&cfg)
			began := time.Now()
			_, err := open(cfg)
			if err == nil {
				t.Fatal("Open succeeded")
			}
			t.Logf("refused after %v: %v", time.Since(began).Round(time.Millisecond), err)
			if !f.want(err) {
				t.Errorf("not the expected reason: %v", err)
			}
			if strings.Contains(err.Error(), pass) {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
	if strings.Contains(logs.String(), pass) {
		t.Errorf("log shows the password:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "tls=true") {
		t.Errorf("log does not say the connection is TLS:\n%s", logs.String())
	}
}

func otherCA(t *testing.T) string {
	t.Helper()
	ca, err := testcert.NewCA("not the server's CA")
	if err != nil {
		t.Fatal(err)
	}
	path, err := ca.WriteFile(t.TempDir(), "other-ca")
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func TestValidateTLS(t *testing.T) {
	cfg := clickhouse.DefaultConfig()
	cfg.TLS.CertFile = "/etc/pagewatch/client.crt"
	cfg.TLS.Enabled = true
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "clickhouse.tls.cert_file: set without clickhouse.tls.key_file") {
		t.Fatalf("Validate = %v", err)
	}
	cfg.TLS = tlsconfig.Config{CAFile: "/etc/pagewatch/ca.pem"}
	err = cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "clickhouse.tls.ca_file: set while clickhouse.tls.enabled is false") {
		t.Fatalf("Validate = %v", err)
	}
}
