package smtptest_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/pagewatch/pagewatch/internal/testserver/smtptest"
)

const body = "Subject: hi\r\n\r\nhello\r\n"

// sendPlain sends over cleartext; go-smtp's SendMail insists on STARTTLS.
func sendPlain(addr string, to ...string) error {
	c, err := smtp.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.SendMail("a@example.com", to, strings.NewReader(body))
}

func TestRecordsMessages(t *testing.T) {
	srv := smtptest.Start(t)
	if err := sendPlain(srv.Addr, "b@example.com", "c@example.com"); err != nil {
		t.Fatalf("SendMail: %v", err)
	}
	msgs := srv.WaitForMessages(t, 1, 5*time.Second)
	m := msgs[0]
	if m.From != "a@example.com" || len(m.To) != 2 || m.To[1] != "c@example.com" {
		t.Errorf("envelope = %q -> %q", m.From, m.To)
	}
	if string(m.Data) != body {
		t.Errorf("data = %q, want %q", m.Data, body)
	}
	if got := srv.Connections(); got != 1 {
		t.Errorf("Connections() = %d, want 1", got)
	}
}

func TestStartTLSAndAuth(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithTLS(), smtptest.WithAuth("u", "p"))
	c, err := smtp.DialStartTLS(srv.Addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("DialStartTLS: %v", err)
	}
	defer c.Close()

	err = c.Auth(sasl.NewPlainClient("", "u", "wrong"))
	var se *smtp.SMTPError
	if !errors.As(err, &se) || se.Code != 535 {
		t.Fatalf("Auth with wrong password: %v, want 535", err)
	}
	if err := c.Auth(sasl.NewLoginClient("u", "p")); err != nil {
		t.Fatalf("Auth LOGIN: %v", err)
	}
	if err := c.SendMail("a@example.com", []string{"b@example.com"}, strings.NewReader(body)); err != nil {
		t.Fatalf("SendMail: %v", err)
	}
	srv.WaitForMessages(t, 1, 5*time.Second)
}

func TestAuthRequired(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithAuth("u", "p"))
	err := sendPlain(srv.Addr, "b@example.com")
	var se *smtp.SMTPError
	if !errors.As(err, &se) || se.Code != 502 {
		t.Fatalf("SendMail without auth: %v, want 502", err)
	}
}

func TestFailures(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithFailures(451, 2))
	send := func() error { return sendPlain(srv.Addr, "b@example.com") }
	for i := range 2 {
		var se *smtp.SMTPError
		if err := send(); !errors.As(err, &se) || se.Code != 451 {
			t.Fatalf("send %d: %v, want 451", i, err)
		}
	}
	if err := send(); err != nil {
		t.Fatalf("third send: %v", err)
	}
	if got := len(srv.Messages()); got != 1 {
		t.Errorf("recorded %d messages, want 1 (rejected ones are not recorded)", got)
	}
}

func TestWaitForMessagesTimeout(t *testing.T) {
	srv := smtptest.Start(t)
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() { // Fatalf ends the goroutine via runtime.Goexit
		defer close(done)
		srv.WaitForMessages(ft, 1, 50*time.Millisecond)
	}()
	<-done
	if !strings.Contains(ft.msg, "got 0 messages") {
		t.Errorf("fatal message = %q", ft.msg)
	}
}

type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestCertPEMVerifies(t *testing.T) {
	for name, opt := range map[string]smtptest.Option{"starttls": smtptest.WithTLS(), "implicit": smtptest.WithImplicitTLS()} {
		t.Run(name, func(t *testing.T) {
			srv := smtptest.Start(t, opt)
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(srv.CertPEM()) {
				t.Fatalf("CertPEM() = %q", srv.CertPEM())
			}
			cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
			var c *smtp.Client
			var err error
			if name == "implicit" {
				c, err = smtp.DialTLS(srv.Addr, cfg)
			} else {
				c, err = smtp.DialStartTLS(srv.Addr, cfg)
			}
			if err != nil {
				t.Fatalf("dial verifying against CertPEM: %v", err)
			}
			if err := c.SendMail("a@example.com", []string{"b@example.com"}, strings.NewReader(body)); err != nil {
				t.Fatalf("SendMail: %v", err)
			}
			c.Close()
			// Each server has its own certificate.
			if bytes.Equal(srv.CertPEM(), smtptest.Start(t, opt).CertPEM()) {
				t.Error("two servers share a certificate")
			}
		})
	}
	if smtptest.Start(t).CertPEM() != nil {
		t.Error("CertPEM without TLS is not nil")
	}
}

func TestStopRestart(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithTLS())
	pem, addr := srv.CertPEM(), srv.Addr
	send := func() error {
		c, err := smtp.DialStartTLS(addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return err
		}
		defer c.Close()
		return c.SendMail("a@example.com", []string{"b@example.com"}, strings.NewReader(body))
	}
	if err := send(); err != nil {
		t.Fatal(err)
	}
	// A client idling on a connection sees it closed by Stop.
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	greeting := make([]byte, 512)
	if _, err := idle.Read(greeting); err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	srv.Stop() // twice is fine
	if err := send(); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("send while stopped: %v, want connection refused", err)
	}
	_ = idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := idle.Read(greeting); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("idle connection after Stop: read err = %v, want it closed", err)
	}

	srv.Restart(t)
	if srv.Addr != addr || !bytes.Equal(srv.CertPEM(), pem) {
		t.Fatalf("after Restart: %s (was %s), same certificate %v", srv.Addr, addr, bytes.Equal(srv.CertPEM(), pem))
	}
	if err := send(); err != nil {
		t.Fatalf("send after Restart: %v", err)
	}
	if got := len(srv.WaitForMessages(t, 2, 5*time.Second)); got != 2 {
		t.Fatalf("%d messages, want 2 (the first survives the restart)", got)
	}
	srv.Restart(t) // while running: stops first
	if err := send(); err != nil {
		t.Fatalf("send after a second Restart: %v", err)
	}
}
