package pageview_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
	"github.com/pagewatch/pagewatch/pipeline/pageview"
)

func parseReal(tb testing.TB) []logformat.Entry {
	tb.Helper()
	lines := realdata.Lines(tb, realdata.ApacheLog)
	entries := make([]logformat.Entry, len(lines))
	for i, l := range lines {
		if err := logformat.Parse(l, &entries[i]); err != nil {
			tb.Fatalf("line %d: %v", i+1, err)
		}
	}
	return entries
}

// What the defaults make of a real site's log (a blog, May 2015): about a
// fifth of its lines are people viewing pages (pages counts counted hits
// only), and as many again are bots' page views, kept but not counted. With every filter off each
// line is a hit and the pages are those of the old tailer, which dropped
// the query and nothing else.
func TestRealLog(t *testing.T) {
	entries := parseReal(t)
	off := func(c *pageview.Config) {
		c.Methods, c.Statuses, c.StaticExtensions, c.Bots, c.CountClasses = nil, nil, nil, nil, nil
	}
	for name, c := range map[string]struct {
		edit  func(*pageview.Config)
		drops map[string]int
		pages map[string]int
	}{
		"defaults": {nil,
			map[string]int{"": 4233, pageview.DropMethod: 48, pageview.DropStatus: 371, pageview.DropStatic: 5348},
			map[string]int{"/": 155, "/blog/tags/puppet": 0, "/favicon.ico": 0, "/projects/xdotool/": 209}},
		"off": {off,
			map[string]int{"": 10000},
			map[string]int{"/": 575, "/blog/tags/puppet": 489, "/favicon.ico": 808, "/projects/xdotool/": 224}}, // one asked for //favicon.ico
	} {
		n := normalizer(t, c.edit)
		classes := n.Classifier().NewCache(0)
		drops, pages := map[string]int{}, map[string]int{}
		counted := 0
		var h hit.Hit
		for i := range entries {
			drop := n.Fill(&h, &entries[i], "s")
			drops[drop]++
			if drop == "" && n.Counts(classes.Class(entries[i].UserAgent)) {
				pages[h.Path]++
				counted++
			}
		}
		t.Logf("%s: %d hits, %d counted", name, drops[""], counted)
		for k, want := range c.drops {
			if drops[k] != want {
				t.Errorf("%s: %d lines dropped for %q, want %d (all: %v)", name, drops[k], k, want, drops)
			}
		}
		for p, want := range c.pages {
			if pages[p] != want {
				t.Errorf("%s: page %s has %d hits, want %d", name, p, pages[p], want)
			}
		}
	}
}

// BenchmarkFill runs the real log through the defaults; one op is one
// line, parsed beforehand.
func BenchmarkFill(b *testing.B) {
	entries := parseReal(b)
	for _, bc := range []struct {
		name string
		edit func(*pageview.Config)
	}{
		{"defaults", nil},
		{"off", func(c *pageview.Config) { c.Methods, c.Statuses, c.StaticExtensions, c.Bots = nil, nil, nil, nil }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			n := normalizer(b, bc.edit)
			var h hit.Hit
			kept := 0
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if n.Fill(&h, &entries[i%len(entries)], "s") == "" {
					kept++
				}
			}
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "lines/s")
			b.ReportMetric(float64(kept)/float64(b.N), "kept/line")
			// allocs/op rounds down to 0 when most lines are dropped; this
			// is the figure that matters: at most the path's one.
			if kept > 0 {
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(kept), "allocs/kept")
			}
		})
	}
}
