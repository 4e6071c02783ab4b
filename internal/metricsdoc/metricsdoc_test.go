package metricsdoc_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/internal/metricsdoc"
)

func TestReadAndServes(t *testing.T) {
	doc, err := metricsdoc.Read(filepath.Join("..", "..", "deploy", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	by := doc.ByDaemon()
	for _, d := range metricsdoc.Daemons {
		if len(by[d]) == 0 {
			t.Errorf("no metric under %q", d)
		}
	}
	for name, want := range map[string]bool{
		"pagewatch_worker_send_duration_seconds_bucket": true,
		"pagewatch_worker_jobs_total":                   true,
		"go_goroutines":                                 true,
		"up":                                            false,
		"pagewatch_worker_nonexistent_total":            false,
	} {
		if got := doc.Serves(name); got != want {
			t.Errorf("Serves(%s) = %v, want %v", name, got, want)
		}
	}
	if !doc.Serves("up", "up") {
		t.Error("an extra name is not served")
	}
}

func TestReadNamesTheLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.md")
	src := "## worker\n\n| metric | type | labels | meaning |\n| --- | --- | --- | --- |\n| `pagewatch_worker_a_total` | counter | — |\n## nowhere\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := metricsdoc.Read(path)
	for _, want := range []string{path + ":5: want 4 columns", path + `:6: heading "nowhere" is no daemon`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to contain %q", err, want)
		}
	}
}
