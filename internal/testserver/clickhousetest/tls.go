package clickhousetest

import (
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/pagewatch/pagewatch/internal/testserver/testcert"
)

// makeCertificates writes ca.crt, server.crt and server.key into the
// server's directory. They are made once per server, so a Restart keeps
// them and clients keep trusting the server.
func (s *Server) makeCertificates() error {
	ca, err := testcert.NewCA("clickhousetest CA")
	if err != nil {
		return err
	}
	pair, err := ca.Server("127.0.0.1", "localhost")
	if err != nil {
		return err
	}
	if _, _, err := pair.WriteFiles(s.Dir, "server"); err != nil {
		return fmt.Errorf("write server certificate: %w", err)
	}
	if s.CAFile, err = ca.WriteFile(s.Dir, "ca"); err != nil {
		return fmt.Errorf("write CA: %w", err)
	}
	return nil
}

// secureReady completes a TLS handshake on the secure port, if there is one.
func (s *Server) secureReady() error {
	if s.SecureAddr == "" {
		return nil
	}
	d := &net.Dialer{Timeout: 2 * time.Second}
	// Only whether the server speaks TLS there matters; the client checks
	// its certificate.
	conn, err := tls.DialWithDialer(d, "tcp", s.SecureAddr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec
	if err != nil {
		return fmt.Errorf("secure port %s: %w", s.SecureAddr, err)
	}
	return conn.Close()
}
