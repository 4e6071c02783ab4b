package tail

import (
	"testing"

	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
)

// Every line of the real log is a page view: the end-to-end tests rely on
// lines in = rows in ClickHouse.
func TestEveryRealLineIsAHit(t *testing.T) {
	var e logformat.Entry
	paths := map[string]int{}
	for i, line := range realdata.Lines(t, realdata.ApacheLog) {
		if err := logformat.Parse(line, &e); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		h, skip := pageview(&e, "s")
		if skip != "" {
			t.Fatalf("line %d skipped (%s): %s", i+1, skip, line)
		}
		paths[h.Path]++
	}
	if paths["/favicon.ico"] != 807 {
		t.Errorf("/favicon.ico: %d hits", paths["/favicon.ico"])
	}
}
