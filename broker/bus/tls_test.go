package bus_test

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/config/tlsconfig"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
	"github.com/pagewatch/pagewatch/internal/testserver/testcert"
)

// pki is a CA with its server certificate for 127.0.0.1, a client
// certificate, and a second CA that signed none of them, all on disk as a
// deployment would have them.
type pki struct {
	ca                        *testcert.CA
	server                    testcert.Pair
	caFile, otherCAFile       string
	clientCert, clientKey     string
	strangerCert, strangerKey string
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var p pki
	var err error
	p.ca, err = testcert.NewCA("nats test CA")
	must(err)
	other, err := testcert.NewCA("some other CA")
	must(err)
	p.server, err = p.ca.Server("127.0.0.1", "localhost")
	must(err)
	client, err := p.ca.Client("pagewatch")
	must(err)
	stranger, err := other.Client("pagewatch")
	must(err)
	p.caFile, err = p.ca.WriteFile(dir, "ca")
	must(err)
	p.otherCAFile, err = other.WriteFile(dir, "other-ca")
	must(err)
	p.clientCert, p.clientKey, err = client.WriteFiles(dir, "client")
	must(err)
	p.strangerCert, p.strangerKey, err = stranger.WriteFiles(dir, "stranger")
	must(err)
	return p
}

// startTLS runs a server that only speaks TLS; mutual also requires a
// client certificate signed by the CA.
func startTLS(t *testing.T, p pki, mutual bool) *natstest.Server {
	t.Helper()
	return natstest.StartWith(t, func(o *server.Options) {
		o.TLSConfig = &tls.Config{Certificates: []tls.Certificate{p.server.TLS}, MinVersion: tls.VersionTLS12}
		o.TLSTimeout = 2
		if mutual {
			o.TLSConfig.ClientAuth = tls.RequireAndVerifyClientCert
			o.TLSConfig.ClientCAs = p.ca.Pool()
			o.TLSVerify = true
		}
	})
}

// plainURL is the server's address with the nats:// scheme: nats.go would
// turn TLS on by itself for tls://, and these tests must show that
// nats.tls does.
func plainURL(ns *natstest.Server) string {
	return "nats://" + strings.TrimPrefix(ns.URL, "tls://")
}

func TestTLSVerifiesAgainstCAFile(t *testing.T) {
	p := newPKI(t)
	ns := startTLS(t, p, false)
	logger, logs := newLogger()
	cfg := config(plainURL(ns))
	cfg.TLS = tlsconfig.Config{Enabled: true, CAFile: p.caFile}
	b, err := connect(t, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Conn.TLSRequired() {
		t.Error("server did not ask for TLS")
	}
	if _, err := b.Conn.TLSConnectionState(); err != nil {
		t.Errorf("connection is not TLS: %v", err)
	}
	useJetStream(t, b)

	var verify *tls.CertificateVerificationError
	t.Run("other CA", func(t *testing.T) {
		cfg := cfg
		cfg.TLS.CAFile = p.otherCAFile
		began := time.Now()
		_, err := connect(t, cfg, logger)
		refused(t, err, began, logs, nats.ErrTLS)
		if !errors.As(err, &verify) {
			t.Errorf("err = %v, want a certificate verification error", err)
		}
	})
	t.Run("system roots", func(t *testing.T) {
		cfg := cfg
		cfg.TLS.CAFile = ""
		began := time.Now()
		_, err := connect(t, cfg, logger)
		refused(t, err, began, logs, nats.ErrTLS)
		if !errors.As(err, &verify) {
			t.Errorf("err = %v, want a certificate verification error", err)
		}
	})
	t.Run("server name not in the certificate", func(t *testing.T) {
		cfg := cfg
		cfg.TLS.ServerName = "nats.example.com"
		began := time.Now()
		_, err := connect(t, cfg, logger)
		refused(t, err, began, logs, nats.ErrTLS)
		if !errors.As(err, &verify) || !strings.Contains(err.Error(), "nats.example.com") {
			t.Errorf("err = %v, want a certificate verification error naming nats.example.com", err)
		}
	})
	t.Run("server name in the certificate", func(t *testing.T) {
		cfg := cfg
		cfg.TLS.ServerName = "localhost"
		b, err := connect(t, cfg, logger)
		if err != nil {
			t.Fatal(err)
		}
		useJetStream(t, b)
	})
	// nats.go upgrades to TLS when the server asks for it, but it can only
	// check the server against the system roots then.
	t.Run("tls off", func(t *testing.T) {
		cfg := cfg
		cfg.TLS = tlsconfig.Config{}
		began := time.Now()
		_, err := connect(t, cfg, logger)
		refused(t, err, began, logs, nats.ErrTLS)
		if !errors.As(err, &verify) {
			t.Errorf("err = %v, want a certificate verification error", err)
		}
	})
}

func TestTLSToAPlainServerIsRefused(t *testing.T) {
	p := newPKI(t)
	ns := natstest.Start(t)
	logger, logs := newLogger()
	cfg := config(ns.URL)
	cfg.TLS = tlsconfig.Config{Enabled: true, CAFile: p.caFile}
	began := time.Now()
	_, err := connect(t, cfg, logger)
	refused(t, err, began, logs, nats.ErrSecureConnWanted)
}

func TestMutualTLS(t *testing.T) {
	p := newPKI(t)
	ns := startTLS(t, p, true)
	logger, logs := newLogger()
	cfg := config(plainURL(ns))
	cfg.TLS = tlsconfig.Config{Enabled: true, CAFile: p.caFile, CertFile: p.clientCert, KeyFile: p.clientKey}
	b, err := connect(t, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	useJetStream(t, b)

	// The server refuses a client without a certificate of its CA. With
	// TLS 1.2 it says so inside the handshake, which ends the attempts.
	// With TLS 1.3 the client has finished its side by then: it sees the
	// connection close under it, which is retried as a restarting server
	// would be, until it reads the server's alert.
	ns12 := natstest.StartWith(t, func(o *server.Options) {
		o.TLSConfig = &tls.Config{
			Certificates: []tls.Certificate{p.server.TLS},
			MinVersion:   tls.VersionTLS12, MaxVersion: tls.VersionTLS12,
			ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: p.ca.Pool(),
		}
		o.TLSVerify = true
	})
	for name, edit := range map[string]func(*tlsconfig.Config){
		"no client certificate":     func(c *tlsconfig.Config) { c.CertFile, c.KeyFile = "", "" },
		"certificate of another CA": func(c *tlsconfig.Config) { c.CertFile, c.KeyFile = p.strangerCert, p.strangerKey },
	} {
		t.Run(name+" tls1.2", func(t *testing.T) {
			cfg := cfg
			cfg.URL = plainURL(ns12)
			edit(&cfg.TLS)
			began := time.Now()
			_, err := connect(t, cfg, logger)
			refused(t, err, began, logs, nats.ErrTLS)
			if !strings.Contains(err.Error(), "remote error: tls:") {
				t.Errorf("err = %v, want the server's TLS alert", err)
			}
		})
		t.Run(name+" tls1.3", func(t *testing.T) {
			cfg := cfg
			edit(&cfg.TLS)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			b, err := bus.Connect(ctx, cfg, t.Name(), logger)
			if err == nil {
				b.Close()
				t.Fatal("Connect succeeded")
			}
			t.Logf("refused: %v", err)
			if !strings.Contains(err.Error(), "tls") {
				t.Errorf("err = %v, want it to say TLS", err)
			}
		})
	}
}
