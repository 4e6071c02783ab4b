package tlsconfig_test

import (
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/config/tlsconfig"
	"github.com/pagewatch/pagewatch/internal/testserver/testcert"
)

type files struct {
	ca, otherCA, cert, key, otherKey, empty string
	ca1                                     *testcert.CA
	server                                  testcert.Pair
}

func makeFiles(t *testing.T) files {
	t.Helper()
	dir := t.TempDir()
	ca, err := testcert.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	other, err := testcert.NewCA("other CA")
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.Server("127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Client("pagewatch")
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := other.Client("stranger")
	if err != nil {
		t.Fatal(err)
	}
	f := files{ca1: ca, server: server}
	f.ca, _ = ca.WriteFile(dir, "ca")
	f.otherCA, _ = other.WriteFile(dir, "other-ca")
	f.cert, f.key, _ = client.WriteFiles(dir, "client")
	_, f.otherKey, _ = stranger.WriteFiles(dir, "stranger")
	f.empty = filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(f.empty, []byte("# a CA bundle someone forgot to fill\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestValidate(t *testing.T) {
	f := makeFiles(t)
	cases := []struct {
		name string
		cfg  tlsconfig.Config
		want []string // substrings of the error; none: valid
	}{
		{"off", tlsconfig.Config{}, nil},
		{"on with system roots", tlsconfig.Config{Enabled: true}, nil},
		{"on with everything", tlsconfig.Config{Enabled: true, CAFile: f.ca, CertFile: f.cert, KeyFile: f.key, ServerName: "db.internal"}, nil},
		{"files while off", tlsconfig.Config{CAFile: f.ca, CertFile: f.cert}, []string{
			"clickhouse.tls.ca_file: set while clickhouse.tls.enabled is false",
			"clickhouse.tls.cert_file: set while clickhouse.tls.enabled is false",
		}},
		{"insecure while off", tlsconfig.Config{InsecureSkipVerify: true}, []string{"clickhouse.tls.insecure_skip_verify: set while clickhouse.tls.enabled is false"}},
		{"cert without key", tlsconfig.Config{Enabled: true, CertFile: f.cert}, []string{"clickhouse.tls.cert_file: set without clickhouse.tls.key_file"}},
		{"key without cert", tlsconfig.Config{Enabled: true, KeyFile: f.key}, []string{"clickhouse.tls.key_file: set without clickhouse.tls.cert_file"}},
		{"missing CA", tlsconfig.Config{Enabled: true, CAFile: f.ca + ".nope"}, []string{"clickhouse.tls.ca_file: open " + f.ca + ".nope: no such file"}},
		{"CA without certificates", tlsconfig.Config{Enabled: true, CAFile: f.empty}, []string{"clickhouse.tls.ca_file: " + f.empty + ": no PEM certificates"}},
		{"key of another certificate", tlsconfig.Config{Enabled: true, CertFile: f.cert, KeyFile: f.otherKey}, []string{"clickhouse.tls.cert_file: " + f.cert + " with key " + f.otherKey + ": tls: private key does not match"}},
		{"key file is a certificate", tlsconfig.Config{Enabled: true, CertFile: f.cert, KeyFile: f.ca}, []string{"clickhouse.tls.cert_file: " + f.cert + " with key " + f.ca}},
		{"insecure with a CA", tlsconfig.Config{Enabled: true, InsecureSkipVerify: true, CAFile: f.ca}, []string{"clickhouse.tls.insecure_skip_verify: set together with clickhouse.tls.ca_file"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate("clickhouse.tls")
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted %+v", c.cfg)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
}

func TestBuildOff(t *testing.T) {
	cfg, err := tlsconfig.Config{}.Build()
	if cfg != nil || err != nil {
		t.Fatalf("Build of a disabled block = %v, %v; want nil, nil", cfg, err)
	}
}

func TestBuildErrorNamesTheField(t *testing.T) {
	f := makeFiles(t)
	_, err := tlsconfig.Config{Enabled: true, CAFile: f.empty}.Build()
	if err == nil || !strings.HasPrefix(err.Error(), "ca_file: "+f.empty) {
		t.Fatalf("Build error = %v, want it to start with ca_file and the path", err)
	}
}

// A handshake against a server that requires a client certificate proves
// the pieces end up where crypto/tls looks for them.
func TestBuildHandshakes(t *testing.T) {
	f := makeFiles(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{f.server.TLS},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    f.ca1.Pool(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.(*tls.Conn).Handshake()
				_, _ = c.Write([]byte("ok"))
			}()
		}
	}()
	dial := func(c tlsconfig.Config) error {
		cfg, err := c.Build()
		if err != nil {
			return err
		}
		if cfg.MinVersion != tls.VersionTLS12 {
			t.Errorf("MinVersion = %x", cfg.MinVersion)
		}
		conn, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		if err != nil {
			return err
		}
		defer conn.Close()
		buf := make([]byte, 2)
		_, err = conn.Read(buf) // TLS 1.3 reports a refused client certificate here
		return err
	}

	good := tlsconfig.Config{Enabled: true, CAFile: f.ca, CertFile: f.cert, KeyFile: f.key}
	if err := dial(good); err != nil {
		t.Fatalf("mutual TLS with the right CA: %v", err)
	}
	byName := good
	byName.ServerName = "localhost"
	if err := dial(byName); err != nil {
		t.Fatalf("server_name localhost: %v", err)
	}

	wrongCA := good
	wrongCA.CAFile = f.otherCA
	var unknown *tls.CertificateVerificationError
	if err := dial(wrongCA); !errors.As(err, &unknown) {
		t.Fatalf("other CA: err = %v, want a certificate verification error", err)
	}
	wrongName := good
	wrongName.ServerName = "db.example.com"
	if err := dial(wrongName); !errors.As(err, &unknown) {
		t.Fatalf("server_name not in the certificate: err = %v, want a certificate verification error", err)
	}
	systemRoots := tlsconfig.Config{Enabled: true, CertFile: f.cert, KeyFile: f.key}
	if err := dial(systemRoots); !errors.As(err, &unknown) {
		t.Fatalf("system roots: err = %v, want a certificate verification error", err)
	}
	noClientCert := tlsconfig.Config{Enabled: true, CAFile: f.ca}
	if err := dial(noClientCert); err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Fatalf("without a client certificate: err = %v, want the server's refusal", err)
	}
}
