package layering

import (
	"os/exec"
	"strings"
	"testing"
)

// Each binary links the stages it runs and no other: a daemon reads its
// own view of the config file (config/ingestconf, ...), not the whole
// file, whose sections would bring every stage in. ingest, run on every
// web server, carries no console, mail, webhook, sweep or notify.
var notLinked = map[string][]string{
	"cmd/ingest":  {"console", "sinks/mail", "sinks/webhook", "pipeline/sweep", "pipeline/notify", "pipeline/report", "config"},
	"cmd/sweeper": {"console", "sinks/mail", "sinks/webhook", "pipeline/notify", "pipeline/report", "pipeline/tail", "pipeline/load", "config"},
	"cmd/worker":  {"console", "pipeline/tail", "pipeline/load", "config"},
	"cmd/console": {"sinks/mail", "sinks/webhook", "pipeline/report", "pipeline/tail", "pipeline/load", "config"},
}

func TestBinariesLinkWhatTheyRun(t *testing.T) {
	for bin, forbidden := range notLinked {
		out, err := exec.Command("go", "list", "-deps", module+bin).Output()
		if err != nil {
			t.Fatalf("go list -deps ./%s: %v", bin, err)
		}
		deps := map[string]bool{}
		for _, p := range strings.Fields(string(out)) {
			deps[strings.TrimPrefix(p, module)] = true
		}
		for _, f := range forbidden {
			if deps[f] {
				t.Errorf("%s links %s, which it does not run (go list -deps ./%s; see why with go mod why -m or by reading its imports)", bin, f, bin)
			}
		}
	}
}
