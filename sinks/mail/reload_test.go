package mail_test

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/internal/testserver/smtptest"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

// After Settings.Set, the next Send goes to the new server with the new
// credentials; an invalid config is refused and the old one stays.
func TestFollowingSwitchesServersOnSet(t *testing.T) {
	first := smtptest.Start(t, smtptest.WithTLS(), smtptest.WithAuth("user", "pass"))
	second := smtptest.Start(t, smtptest.WithTLS(), smtptest.WithAuth("user2", "rotated"))
	settings := mail.NewSettings(smtpConfig(first))
	f, err := mail.NewFollowing(settings, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	if err := f.Send(ctx, testNotification()); err != nil {
		t.Fatal(err)
	}

	bad := smtpConfig(second)
	bad.SMTP.Port = 0
	if err := settings.Set(bad); err == nil || !strings.Contains(err.Error(), "smtp.port") {
		t.Fatalf("invalid config: %v", err)
	}
	next := smtpConfig(second)
	next.SMTP.Username, next.SMTP.Password = "user2", secret.New("rotated")
	if err := settings.Set(next); err != nil {
		t.Fatal(err)
	}
	if err := f.Send(ctx, testNotification()); err != nil {
		t.Fatal(err)
	}
	if a, b := len(first.Messages()), len(second.Messages()); a != 1 || b != 1 {
		t.Fatalf("messages: first %d, second %d; want 1 and 1", a, b)
	}
}

func TestProbe(t *testing.T) {
	srv := smtptest.Start(t)
	ctx := context.Background()
	if err := mail.Probe(ctx, smtpConfig(srv)); err != nil {
		t.Fatalf("running server: %v", err)
	}
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := smtpConfig(srv)
	closed.SMTP.Port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	if err := mail.Probe(ctx, closed); err == nil {
		t.Fatal("closed port: no error")
	}
	// A server that does not greet within the timeout.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	mute := smtpConfig(srv)
	mute.SMTP.Port = silent.Addr().(*net.TCPAddr).Port
	mute.SMTP.Timeout = 200 * time.Millisecond
	if err := mail.Probe(ctx, mute); err == nil || !strings.Contains(err.Error(), "greeting") {
		t.Fatalf("silent server: %v", err)
	}

	file := mail.DefaultConfig()
	file.File.Dir = t.TempDir()
	if err := mail.Probe(ctx, file); err != nil {
		t.Fatalf("writable dir: %v", err)
	}
	file.File.Dir = filepath.Join(file.File.Dir, "missing")
	if err := mail.Probe(ctx, file); err == nil || !strings.Contains(err.Error(), "mail.file.dir") {
		t.Fatalf("missing dir: %v", err)
	}
}
