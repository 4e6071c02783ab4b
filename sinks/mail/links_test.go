package mail_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/pipeline/links"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

// With links, each recipient gets a copy with their own List-Unsubscribe
// (RFC 8058 one-click) and both links in both bodies; without, none.
func TestLinksPerRecipient(t *testing.T) {
	dir := t.TempDir()
	s := newSender(t, fileConfig(dir))
	n := testNotification()
	n.Recipients = []string{"ann@example.com", "bob@example.com"}
	n.Links = map[string]links.RecipientLinks{
		"ann@example.com": {Unsubscribe: "https://pw.example/links/unsubscribe?t=ANN", Snooze: "https://pw.example/links/snooze?t=ANN", SnoozeFor: 24 * time.Hour},
		"bob@example.com": {Unsubscribe: "https://pw.example/links/unsubscribe?t=BOB"},
	}
	if err := s.Send(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	for i, who := range []string{"ANN", "BOB"} {
		name := mail.FileName(n.Key)
		if i > 0 {
			name = mail.FileName(n.Key + ".1")
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		p := parseMessage(t, data)
		if got, want := p.Header.Get("List-Unsubscribe"), "<https://pw.example/links/unsubscribe?t="+who+">"; got != want {
			t.Errorf("List-Unsubscribe = %q, want %q", got, want)
		}
		if got := p.Header.Get("List-Unsubscribe-Post"); got != "List-Unsubscribe=One-Click" {
			t.Errorf("List-Unsubscribe-Post = %q", got)
		}
		if to := p.Header.Get("To"); !strings.Contains(to, strings.ToLower(who)+"@") || strings.Contains(to, ",") {
			t.Errorf("To = %q", to)
		}
		for _, body := range []string{p.Text, p.HTML} {
			if !strings.Contains(body, "links/unsubscribe?t="+who) {
				t.Errorf("body lacks the unsubscribe link:\n%s", body)
			}
			if snooze := strings.Contains(body, "links/snooze?t=") && strings.Contains(body, "Snooze this page for 24 h"); snooze != (who == "ANN") {
				t.Errorf("snooze link shown: %t, want %t", snooze, who == "ANN")
			}
		}
	}

	n.Links = nil
	n.Key += "x"
	if err := s.Send(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, mail.FileName(n.Key)))
	if err != nil {
		t.Fatal(err)
	}
	p := parseMessage(t, data)
	if p.Header.Get("List-Unsubscribe") != "" || strings.Contains(p.Text, "nsubscribe") || strings.Contains(p.HTML, "nsubscribe") {
		t.Error("links in a mail without them")
	}
}
