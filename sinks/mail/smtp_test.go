package mail_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/internal/testserver/smtptest"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

const wait = 5 * time.Second

func TestSMTPStartTLSPlainAuth(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithTLS(), smtptest.WithAuth("user", "pass"))
	s := newSender(t, smtpConfig(srv))

	n := testNotification()
	n.Recipients = []string{"ops@example.com", "Dev Team <dev@example.com>"}
	if err := s.Send(context.Background(), n); err != nil {
		t.Fatalf("Send: %v", err)
	}
	m := srv.WaitForMessages(t, 1, wait)[0]
	if m.From != "pagewatch@example.com" {
		t.Errorf("MAIL FROM = %q", m.From)
	}
	if strings.Join(m.To, ",") != "ops@example.com,dev@example.com" {
		t.Errorf("RCPT TO = %q", m.To)
	}

	p := parseMessage(t, m.Data)
	if got, want := p.Header.Get("Message-ID"), "<"+crossing.MessageID(n.Key)+">"; got != want {
		t.Errorf("Message-ID = %q, want %q", got, want)
	}
	if want := "[pagewatch] /pricing passed 1,000 views in 1h"; p.Subject != want {
		t.Errorf("Subject = %q, want %q", p.Subject, want)
	}
	if got := p.Header.Get("Auto-Submitted"); got != "auto-generated" {
		t.Errorf("Auto-Submitted = %q", got)
	}
	for _, want := range []string{"example.com", "/pricing", "1,234", "1,000", "1h", "2025-03-04T04:06:07Z", "pricing-hourly"} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("text body lacks %q:\n%s", want, p.Text)
		}
		if !strings.Contains(p.HTML, want) {
			t.Errorf("html body lacks %q:\n%s", want, p.HTML)
		}
	}
}

func TestSMTPMessageIDIsDeterministic(t *testing.T) {
	id := crossing.MessageID("pricing-hourly.3f2a9c.1")
	if id != crossing.MessageID("pricing-hourly.3f2a9c.1") {
		t.Fatal("MessageID differs between calls")
	}
	if id == crossing.MessageID("pricing-hourly.3f2a9c.2") {
		t.Fatal("MessageID collides for different keys")
	}
	local, domain, _ := strings.Cut(id, "@")
	if len(local) != 32 || domain != "pagewatch" {
		t.Errorf("MessageID = %q, want 32 hex chars @pagewatch", id)
	}
}

func TestSMTPAuthMechanisms(t *testing.T) {
	for _, auth := range []string{mail.AuthPlain, mail.AuthLogin, mail.AuthCRAMMD5, mail.AuthXOAUTH2} {
		t.Run(auth, func(t *testing.T) {
			srv := smtptest.Start(t, smtptest.WithTLS(), smtptest.WithAuth("user", "pass"))
			cfg := smtpConfig(srv)
			cfg.SMTP.Auth = auth
			if err := newSender(t, cfg).Send(context.Background(), testNotification()); err != nil {
				t.Fatalf("Send: %v", err)
			}
			srv.WaitForMessages(t, 1, wait)
		})
	}
}

func TestSMTPWrongPasswordIsPermanent(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithTLS(), smtptest.WithAuth("user", "pass"))
	cfg := smtpConfig(srv)
	cfg.SMTP.Password = secret.New("wrong")
	err := newSender(t, cfg).Send(context.Background(), testNotification())
	if err == nil {
		t.Fatal("Send succeeded with a wrong password")
	}
	if code := mail.SMTPCode(err); code != 535 {
		t.Errorf("SMTPCode = %d, want 535 (%v)", code, err)
	}
	if !mail.IsPermanent(err) {
		t.Errorf("IsPermanent = false for %v", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("error leaks the password: %v", err)
	}
}

func TestSMTPHostileNotification(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithTLS(), smtptest.WithAuth("user", "pass"))
	s := newSender(t, smtpConfig(srv))

	n := testNotification()
	n.Path = "/x\r\nBcc: evil@example.com<script>alert(1)</script>" +
		strings.Repeat("junk\x00\x1b[31m\u202e", 100<<10/12) + "\xff\xfe\xc3"
	n.Site = "example.com\r\nX-Injected: yes\n<img src=x onerror=alert(1)>"
	if err := s.Send(context.Background(), n); err != nil {
		t.Fatalf("Send: %v", err)
	}
	m := srv.WaitForMessages(t, 1, wait)[0]
	if strings.Join(m.To, ",") != "ops@example.com" {
		t.Fatalf("RCPT TO = %q, want only ops@example.com", m.To)
	}

	p := parseMessage(t, m.Data)
	for _, line := range strings.Split(p.HeaderBlock, "\r\n") {
		name, _, _ := strings.Cut(line, ":")
		if strings.EqualFold(name, "Bcc") || strings.EqualFold(name, "X-Injected") {
			t.Errorf("injected header line %q", line)
		}
	}
	for _, h := range []string{"From", "To", "Subject", "Message-Id", "Date", "Content-Type"} {
		if got := len(p.Header[h]); got != 1 {
			t.Errorf("%d %s headers, want 1", got, h)
		}
	}
	if len(p.Header["Bcc"]) != 0 || len(p.Header["X-Injected"]) != 0 {
		t.Errorf("injected headers parsed: %v", p.Header)
	}

	if strings.ContainsAny(p.Subject, "\r\n\x00\x1b") || !utf8.ValidString(p.Subject) {
		t.Errorf("subject not a clean single line: %q", p.Subject)
	}
	path, _, _ := strings.Cut(strings.TrimPrefix(p.Subject, "[pagewatch] "), " passed ")
	if got := utf8.RuneCountInString(path); got > 200 || !strings.HasSuffix(path, "…") {
		t.Errorf("subject path has %d runes, want <= 200 ending in an ellipsis", got)
	}

	if strings.Contains(p.HTML, "<script>") || strings.Contains(p.HTML, "<img") {
		t.Errorf("raw markup from input in HTML part")
	}
	if !strings.Contains(p.HTML, "&lt;script&gt;") {
		t.Errorf("escaped <script> missing from HTML part")
	}
	for name, body := range map[string]string{"text": p.Text, "html": p.HTML} {
		if !utf8.ValidString(body) {
			t.Errorf("%s part is not valid UTF-8", name)
		}
		if strings.ContainsAny(body, "\x00\x1b\u202e") {
			t.Errorf("%s part carries control characters", name)
		}
		if strings.Contains(body, "\nBcc:") || strings.Contains(body, "\nX-Injected") {
			t.Errorf("%s part has input-forged lines", name)
		}
		if len(body) > 20000 {
			t.Errorf("%s part is %d bytes; input was not shortened", name, len(body))
		}
	}
}

func TestSMTPTemporaryFailureThenSuccess(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithTLS(), smtptest.WithAuth("user", "pass"), smtptest.WithFailures(451, 1))
	s := newSender(t, smtpConfig(srv))
	n := testNotification()

	err := s.Send(context.Background(), n)
	if err == nil {
		t.Fatal("first Send succeeded, want 451")
	}
	if code := mail.SMTPCode(err); code != 451 {
		t.Errorf("SMTPCode = %d, want 451 (%v)", code, err)
	}
	if mail.IsPermanent(err) {
		t.Errorf("IsPermanent = true for a 451")
	}
	if want := "send " + n.Key + " to 1 recipients: "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q lacks prefix %q", err, want)
	}

	if err := s.Send(context.Background(), n); err != nil {
		t.Fatalf("retry: %v", err)
	}
	srv.WaitForMessages(t, 1, wait)
	// A rejection is answered with RSET, not a new connection.
	if got := srv.Connections(); got != 1 {
		t.Errorf("%d connections, want 1", got)
	}
}

func TestSMTPPermanentFailure(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithTLS(), smtptest.WithAuth("user", "pass"), smtptest.WithFailures(550, 1))
	err := newSender(t, smtpConfig(srv)).Send(context.Background(), testNotification())
	if code := mail.SMTPCode(err); code != 550 {
		t.Errorf("SMTPCode = %d, want 550 (%v)", code, err)
	}
	if !mail.IsPermanent(err) {
		t.Errorf("IsPermanent = false for %v", err)
	}
}

func TestSMTPReusesConnection(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithTLS(), smtptest.WithAuth("user", "pass"))
	s := newSender(t, smtpConfig(srv))
	for i := range 3 {
		n := testNotification()
		n.Key += strconv.Itoa(i)
		if err := s.Send(context.Background(), n); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	msgs := srv.WaitForMessages(t, 3, wait)
	if len(msgs) != 3 {
		t.Errorf("%d messages, want 3", len(msgs))
	}
	if got := srv.Connections(); got != 1 {
		t.Errorf("%d connections for 3 sends, want 1", got)
	}
}

func TestSMTPRedialsDroppedConnection(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithTLS(), smtptest.WithAuth("user", "pass"))
	s := newSender(t, smtpConfig(srv))
	if err := s.Send(context.Background(), testNotification()); err != nil {
		t.Fatalf("first Send: %v", err)
	}
	srv.DropConnections()
	if err := s.Send(context.Background(), testNotification()); err != nil {
		t.Fatalf("Send after drop: %v", err)
	}
	srv.WaitForMessages(t, 2, wait)
	if got := srv.Connections(); got != 2 {
		t.Errorf("%d connections, want 2", got)
	}
}

func TestSMTPImplicitTLS(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithImplicitTLS(), smtptest.WithAuth("user", "pass"))
	cfg := smtpConfig(srv)
	cfg.SMTP.TLS = mail.TLSImplicit
	if err := newSender(t, cfg).Send(context.Background(), testNotification()); err != nil {
		t.Fatalf("Send: %v", err)
	}
	srv.WaitForMessages(t, 1, wait)
}

func TestSMTPNoTLS(t *testing.T) {
	srv := smtptest.Start(t)
	cfg := smtpConfig(srv)
	cfg.SMTP.TLS = mail.TLSNone
	cfg.SMTP.Auth = mail.AuthNone
	if err := newSender(t, cfg).Send(context.Background(), testNotification()); err != nil {
		t.Fatalf("Send: %v", err)
	}
	srv.WaitForMessages(t, 1, wait)
}

func TestSMTPMandatoryTLSRefusesPlainServer(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithAuth("user", "pass")) // no STARTTLS offered
	err := newSender(t, smtpConfig(srv)).Send(context.Background(), testNotification())
	if err == nil {
		t.Fatal("Send succeeded without TLS under mail.smtp.tls: mandatory")
	}
	if len(srv.Messages()) != 0 {
		t.Error("message delivered in cleartext")
	}
}

func TestSMTPConnectionRefusedIsTemporary(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close() // nothing listens there now

	cfg := mail.DefaultConfig()
	cfg.Transport = mail.TransportSMTP
	cfg.SMTP.Host, cfg.SMTP.Port = "127.0.0.1", port
	err = newSender(t, cfg).Send(context.Background(), testNotification())
	if err == nil {
		t.Fatal("Send succeeded with no server")
	}
	if mail.IsPermanent(err) || mail.SMTPCode(err) != 0 {
		t.Errorf("IsPermanent=%t SMTPCode=%d for %v, want temporary, 0", mail.IsPermanent(err), mail.SMTPCode(err), err)
	}
}

func TestSMTPCancelledContext(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithTLS(), smtptest.WithAuth("user", "pass"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := newSender(t, smtpConfig(srv)).Send(ctx, testNotification())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Send with cancelled context: %v, want context.Canceled", err)
	}
}

func TestSMTPCancelAbortsStalledServer(t *testing.T) {
	// A server that accepts and then never speaks: only the context can
	// end the wait, since the configured timeout is far longer.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		select {
		case c := <-accepted:
			_ = c.Close()
		default:
		}
	})

	cfg := mail.DefaultConfig()
	cfg.Transport = mail.TransportSMTP
	cfg.SMTP.Host, cfg.SMTP.Port = "127.0.0.1", l.Addr().(*net.TCPAddr).Port
	cfg.SMTP.Timeout = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()

	start := time.Now()
	err = newSender(t, cfg).Send(ctx, testNotification())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Send = %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Send took %v after its context expired", took)
	}
}

func TestSendRejectsBadRecipientsPermanently(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithTLS(), smtptest.WithAuth("user", "pass"))
	s := newSender(t, smtpConfig(srv))
	for _, rcpts := range [][]string{nil, {"not an address"}, {"a@example.com\r\nBcc: evil@example.com"}} {
		n := testNotification()
		n.Recipients = rcpts
		err := s.Send(context.Background(), n)
		if err == nil || !mail.IsPermanent(err) {
			t.Errorf("recipients %q: err = %v, want a permanent error", rcpts, err)
		}
	}
	if len(srv.Messages()) != 0 {
		t.Error("a message went out")
	}
}

func TestSendAfterClose(t *testing.T) {
	srv := smtptest.Start(t, smtptest.WithTLS(), smtptest.WithAuth("user", "pass"))
	s, err := mail.New(smtpConfig(srv), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(context.Background(), testNotification()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Send(context.Background(), testNotification()); err == nil {
		t.Error("Send after Close succeeded")
	}
}
