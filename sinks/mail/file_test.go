package mail_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

func fileConfig(dir string) mail.Config {
	cfg := mail.DefaultConfig()
	cfg.File.Dir = dir
	return cfg
}

func TestFileTransportWritesEML(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "outbox") // created on demand
	s := newSender(t, fileConfig(dir))
	n := testNotification()
	if err := s.Send(context.Background(), n); err != nil {
		t.Fatalf("Send: %v", err)
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != n.Key+".eml" {
		t.Fatalf("dir holds %v, want only %s.eml (no temp files)", entries, n.Key)
	}
	data, err := os.ReadFile(filepath.Join(dir, n.Key+".eml"))
	if err != nil {
		t.Fatal(err)
	}
	p := parseMessage(t, data)
	if got, want := p.Header.Get("Message-ID"), "<"+crossing.MessageID(n.Key)+">"; got != want {
		t.Errorf("Message-ID = %q, want %q", got, want)
	}
	if got := p.Header.Get("To"); got != "<ops@example.com>" {
		t.Errorf("To = %q", got)
	}
	if !strings.Contains(p.Text, "1,234") {
		t.Errorf("text body lacks the count:\n%s", p.Text)
	}

	// Sending the same crossing again replaces the file rather than adding one.
	if err := s.Send(context.Background(), n); err != nil {
		t.Fatalf("second Send: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("dir holds %d files after a duplicate send, want 1", len(entries))
	}
}

func TestFileNameIsSafe(t *testing.T) {
	if got := mail.FileName("pricing-hourly.3f2a9c.1"); got != "pricing-hourly.3f2a9c.1.eml" {
		t.Errorf("FileName(plain key) = %q", got)
	}
	seen := map[string]string{}
	for _, key := range []string{"../../etc/passwd", "..", ".hidden", "a/b", "a_b", "", "x\x00y", strings.Repeat("k", 500)} {
		name := mail.FileName(key)
		if strings.ContainsAny(name, `/\`+"\x00") || strings.HasPrefix(name, ".") || len(name) > 200 {
			t.Errorf("FileName(%q) = %q is unsafe", key, name)
		}
		if other, dup := seen[name]; dup {
			t.Errorf("FileName(%q) = FileName(%q) = %q", key, other, name)
		}
		seen[name] = key
	}
}

func TestFileTransportHostileKeyStaysInDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "outbox")
	s := newSender(t, fileConfig(dir))
	n := testNotification()
	n.Key = "../escape"
	if err := s.Send(context.Background(), n); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "escape.eml")); !os.IsNotExist(err) {
		t.Errorf("file written outside the outbox (stat err %v)", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("outbox holds %d files, want 1", len(entries))
	}
}
