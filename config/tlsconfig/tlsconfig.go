// Package tlsconfig is the `tls:` block of the nats and clickhouse sections:
// whether to use TLS, which CA to trust and, for mutual TLS, the client
// certificate. Validate names the full key of every problem; Build turns
// the block into a *tls.Config for the client library.
package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// Config is one `tls:` block.
type Config struct {
	Enabled bool `yaml:"enabled"`
	// CAFile is a PEM bundle that replaces the system roots: a private CA
	// is trusted for this server and nothing else. Empty: system roots.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are the client certificate for mutual TLS.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName is checked against the server's certificate instead of
	// the host being dialled, for servers reached by IP or through a proxy.
	ServerName string `yaml:"server_name"`
	// InsecureSkipVerify accepts any certificate: encryption without
	// knowing who is at the other end. For lab setups only.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// Validate reports every problem, each naming its full key; key is the
// block's own, e.g. "clickhouse.tls". The files are read and parsed, so a
// daemon with a bad path stops at start-up instead of at its first
// connection.
func (c Config) Validate(key string) error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", key, field, fmt.Sprintf(format, args...)))
	}
	if !c.Enabled {
		// Someone who wrote a ca_file meant TLS; silently dialling in
		// cleartext would hide that the block is off.
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"ca_file", c.CAFile != ""}, {"cert_file", c.CertFile != ""}, {"key_file", c.KeyFile != ""},
			{"server_name", c.ServerName != ""}, {"insecure_skip_verify", c.InsecureSkipVerify},
		} {
			if f.set {
				bad(f.name, "set while %s.enabled is false (set enabled: true to use TLS)", key)
			}
		}
		return errors.Join(errs...)
	}
	if c.CertFile != "" && c.KeyFile == "" {
		bad("cert_file", "set without %s.key_file", key)
	}
	if c.KeyFile != "" && c.CertFile == "" {
		bad("key_file", "set without %s.cert_file", key)
	}
	if c.InsecureSkipVerify && c.CAFile != "" {
		bad("insecure_skip_verify", "set together with %s.ca_file, which it would ignore", key)
	}
	if c.CAFile != "" {
		if _, err := loadCA(c.CAFile); err != nil {
			bad("ca_file", "%v", err)
		}
	}
	if c.CertFile != "" && c.KeyFile != "" {
		if _, err := loadPair(c.CertFile, c.KeyFile); err != nil {
			bad("cert_file", "%v", err)
		}
	}
	return errors.Join(errs...)
}

// Build returns the client TLS configuration, or nil when TLS is off. Its
// errors start with the field ("ca_file: ..."), so a caller prefixes its
// block's key: fmt.Errorf("nats.tls.%w", err).
func (c Config) Build() (*tls.Config, error) {
	if !c.Enabled {
		return nil, nil
	}
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         c.ServerName,
		InsecureSkipVerify: c.InsecureSkipVerify, //nolint:gosec // opt-in, documented as lab-only
	}
	if c.CAFile != "" {
		pool, err := loadCA(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ca_file: %w", err)
		}
		cfg.RootCAs = pool // nil (the default) means the system roots
	}
	if c.CertFile != "" || c.KeyFile != "" {
		pair, err := loadPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("cert_file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// loadCA reads every certificate of a PEM bundle. x509.CertPool's own
// AppendCertsFromPEM skips what it cannot parse and only says "false",
// which would leave a typo in a bundle unexplained.
func loadCA(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err // names the path
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		n++
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: certificate %d: %w", path, n, err)
		}
		pool.AddCert(cert)
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: no PEM certificates in it", path)
	}
	return pool, nil
}

func loadPair(certFile, keyFile string) (tls.Certificate, error) {
	if certFile == "" || keyFile == "" {
		return tls.Certificate{}, errors.New("cert_file and key_file must be set together")
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s with key %s: %w", certFile, keyFile, err)
	}
	return pair, nil
}
