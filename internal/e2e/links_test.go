package e2e

import (
	"io"
	"net"
	"net/http"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/pipeline/links"
)

// TestEmailLinksThroughTheWorker: with worker.links set, the worker
// mails each recipient a copy with their own List-Unsubscribe, and serves
// the links on its admin listener: the one-click POST unsubscribes, the
// snooze POST adds a silence, a forged token is refused.
func TestEmailLinksThroughTheWorker(t *testing.T) {
	b := setupWith(t, setupOptions{
		rules: `    - {name: pricing-hourly, site: example.com, path: /pricing, threshold: 40, window: 1h, notify: {recipients: [sales@example.com, ops@example.com]}}`,
		pages: "{}", load: defaultLoad, worker: defaultWorker,
	})
	// A port for the worker's admin listener, so base_url can name it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	data, err := os.ReadFile(b.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(data), "worker:\n  listen: \"127.0.0.1:0\"\n",
		"worker:\n  listen: \""+addr+"\"\n  links: {base_url: \"http://"+addr+"\", secret: \"0123456789abcdef0123456789abcdef\"}\n", 1)
	if cfg == string(data) {
		t.Fatal("no worker section to add links to")
	}
	linksConfig := filepath.Join(b.dir, "links.yaml")
	if err := os.WriteFile(linksConfig, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	b.start(t, "ingest", "load")
	b.start(t, "ingest", "tail")
	b.start(t, "sweeper")
	b.startConfig(t, linksConfig, "worker")
	appendLines(t, b.log, freshLines(50))

	msgs := b.smtp.WaitForMessages(t, 2, 60*time.Second)
	mailed := map[string]string{}
	for _, m := range msgs {
		parsed, err := mail.ReadMessage(strings.NewReader(string(m.Data)))
		if err != nil {
			t.Fatal(err)
		}
		if len(m.To) != 1 {
			t.Fatalf("a copy to %v", m.To)
		}
		mailed[m.To[0]] = strings.Trim(parsed.Header.Get("List-Unsubscribe"), "<>")
		if parsed.Header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
			t.Errorf("no List-Unsubscribe-Post in the mail to %s", m.To[0])
		}
	}
	ops := mailed["ops@example.com"]
	if !strings.HasPrefix(ops, "http://"+addr+"/links/unsubscribe?t=") || mailed["sales@example.com"] == ops {
		t.Fatalf("links: %v", mailed)
	}
	post := func(u string) int {
		resp, err := http.Post(u, "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(ops + "x"); code != http.StatusForbidden {
		t.Errorf("forged token: %d, want 403", code)
	}
	if code := post(ops); code != http.StatusOK {
		t.Fatalf("one-click: %d", code)
	}
	client := testenv.NATSClient(t, b.natsURL(), testenv.Logger(t))
	unsubs, err := links.OpenUnsubscribes(t.Context(), client)
	if err != nil {
		t.Fatal(err)
	}
	testcheck.Eventually(t, 5*time.Second, "ops@ unsubscribed from pricing-hourly", func() bool {
		has, err := unsubs.Has(t.Context(), "pricing-hourly", "ops@example.com")
		return err == nil && has
	})
	if has, _ := unsubs.Has(t.Context(), "pricing-hourly", "sales@example.com"); has {
		t.Fatal("sales@ unsubscribed too")
	}
}
