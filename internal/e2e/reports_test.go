package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReportFromTwoWorkers: two worker daemons run a report whose
// schedule fires every second; one report mail arrives for the period.
func TestReportFromTwoWorkers(t *testing.T) {
	b := setupWith(t, setupOptions{rules: "    []", load: defaultLoad, worker: defaultWorker})
	data, err := os.ReadFile(b.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(data) + `reports:
  - {name: daily, site: example.com, schedule: "* * * * * *", period: day, zone: Europe/Berlin, receivers: [email], to: [team@example.com]}
`
	path := filepath.Join(b.dir, "reports.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	b.startConfig(t, path, "worker")
	b.startConfig(t, path, "worker")
	msg := b.smtp.WaitForMessages(t, 1, 60*time.Second)[0]
	time.Sleep(3 * time.Second) // three more firings in each worker
	if n := len(b.smtp.Messages()); n != 1 {
		// Two only if the run crossed midnight in Berlin.
		if n != 2 || time.Now().In(berlin(t)).Hour() != 0 {
			t.Fatalf("%d report mails, want 1", n)
		}
	}
	if len(msg.To) != 1 || msg.To[0] != "team@example.com" || !strings.Contains(string(msg.Data), "Daily report for example.com") {
		t.Fatalf("mail to %v:\n%.600s", msg.To, msg.Data)
	}
}

func berlin(t *testing.T) *time.Location {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
