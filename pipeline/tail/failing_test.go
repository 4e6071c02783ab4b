package tail_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/tail"
)

// One input that cannot be read (here a directory where its log was,
// after a rotation; in life also a successor logrotate created 0600)
// stops neither the other inputs nor the tailer: the bad one is logged,
// counted and tried again, and once it can be read it is followed from
// where it was, every line of both once. Before, its error ended the
// Run: the good input's next 100 lines were never published.
func TestOneUnreadableInputLeavesTheOthersFlowing(t *testing.T) {
	b := setup(t)
	other := filepath.Join(b.dir, "other.log")
	b.cfg.Inputs = append(b.cfg.Inputs, tail.Input{Path: other, Site: "other.example"})
	appendLines(t, other, b.lines[:10])
	reg := prometheus.NewRegistry()
	_, ended := b.startWith(t, reg)

	appendLines(t, b.log, b.lines[:100])
	b.waitHits(t, 110)
	rename(t, other, other+".1")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	failures := func() float64 {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == "pagewatch_ingest_tail_file_failures_total" {
				return f.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return -1
	}
	testcheck.Eventually(t, 20*time.Second, "the directory's follower failing", func() error {
		if n := failures(); n < 1 {
			return fmt.Errorf("%v failures", n)
		}
		return nil
	})
	appendLines(t, b.log, b.lines[100:200])
	b.waitHits(t, 210)
	if over, err := ended(); over {
		t.Fatalf("the tailer stopped over one input: %v", err)
	}
	// The directory gives way to a log again: read from its start.
	if err := os.Remove(other); err != nil {
		t.Fatal(err)
	}
	appendLines(t, other, b.lines[200:205])
	b.waitHits(t, 215)
}
