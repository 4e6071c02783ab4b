package tail_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/pageview"
	"github.com/pagewatch/pagewatch/pipeline/tail"
)

// The real log through the default ingest.tail.pages: about two fifths
// of its lines are page views, bots' among them (pipeline/pageview's
// TestRealLog says which), and every other line is counted under the
// filter that dropped it.
func TestPagesFilteredAndCounted(t *testing.T) {
	b := setup(t)
	b.cfg.Pages = pageview.DefaultConfig()
	vhosts := filepath.Join(b.dir, "vhosts.log")
	b.cfg.Inputs = append(b.cfg.Inputs, tail.Input{Path: vhosts, Format: "vhost_combined"})
	reg := prometheus.NewRegistry()
	tl, err := tail.New(b.cfg, tail.Deps{Bus: b.bus, Logger: b.logger, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := tl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("tailer: %v", err)
		}
	}()

	appendLines(t, b.log, b.lines)
	const pre = ` 1.2.3.4 - - [17/May/2015:10:05:03 +0000] `
	appendLines(t, vhosts, [][]byte{
		[]byte(`Shop.Example.com:443` + pre + `"GET /cart/./items%2fall?session=1 HTTP/1.1" 200 5 "-" "Mozilla/5.0"`),
		[]byte(`-:80` + pre + `"GET / HTTP/1.1" 200 5 "-" "Mozilla/5.0"`), // no Host header
		[]byte(`shop.example.com:443` + pre + `"GET /a\x0A\x00b HTTP/1.1" 200 5 "-" "Mozilla/5.0"`),
	})
	const total, kept = 10_000 + 3, 4233 + 2
	testcheck.Eventually(t, 20*time.Second, "the tailer to consume every line", func() bool {
		return counter(t, reg, "pagewatch_ingest_tail_lines_total", "result", "hit")+
			counter(t, reg, "pagewatch_ingest_tail_lines_total", "result", "skipped") >= total
	})
	hits := b.waitHits(t, kept)
	paths := map[string]string{}
	classes, counted := map[hit.Class]float64{}, 0
	for _, h := range hits {
		paths[h.Site+h.Path] = h.Method
		classes[h.Class]++
		if !h.Uncounted {
			counted++
		}
	}
	// The real log's counted views (pipeline/pageview's TestRealLog) and
	// the vhost lines' two; bots' views travel too, not counted.
	if counted != 1876+2 {
		t.Errorf("%d hits counted, want %d", counted, 1876+2)
	}
	for _, c := range hit.Classes() {
		if got := counter(t, reg, "pagewatch_ingest_tail_hits_by_class_total", "class", c.String()); got != classes[c] {
			t.Errorf("hits_by_class{class=%q} = %v, hits of the class %v", c, got, classes[c])
		}
	}
	t.Logf("hits by class: %v", classes)
	for _, p := range []string{"example.com/", "shop.example.com/cart/items%2Fall", "shop.example.com/a%0A%00b"} {
		if paths[p] != "GET" {
			t.Errorf("no hit on %s", p)
		}
	}
	for filter, want := range map[string]float64{
		pageview.DropNoRequest: 0, pageview.DropMethod: 48, pageview.DropStatus: 371,
		pageview.DropNotAPath: 0, pageview.DropStatic: 5348, "no_site": 1,
	} {
		if got := counter(t, reg, "pagewatch_ingest_tail_filtered_lines_total", "filter", filter); got != want {
			t.Errorf("filtered{filter=%q} = %v, want %v", filter, got, want)
		}
	}
	if got := counter(t, reg, "pagewatch_ingest_tail_lines_total", "result", "hit"); got != kept {
		t.Errorf("lines{result=hit} = %v, want %v", got, kept)
	}
}

// counter reads one series of a counter vector from reg; a missing series
// fails the test, since every label value is registered at zero.
func counter(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabel(m, label, value) || label == "" && len(m.GetLabel()) == 0 {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no series %s{%s=%q}", name, label, value)
	return 0
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}
