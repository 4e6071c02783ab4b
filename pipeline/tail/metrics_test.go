package tail_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/tail"
)

// While JetStream is away, the lag is the bytes written since the last
// publish and the age of the oldest unpublished line keeps growing; both
// go back to 0 once JetStream is back and the lines are out.
func TestLagAndAgeMetrics(t *testing.T) {
	b := setup(t)
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
			t.Error(err)
		}
	}()
	lag := func() float64 { return metric(t, reg, "pagewatch_ingest_tail_lag_bytes", b.log) }
	age := func() float64 { return metric(t, reg, "pagewatch_ingest_tail_oldest_unpublished_age_seconds", b.log) }
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		testcheck.Eventually(t, 10*time.Second, what, func() error {
			if !ok() {
				return fmt.Errorf("lag %v, age %v", lag(), age())
			}
			return nil
		})
	}

	appendLines(t, b.log, b.lines[:500])
	b.waitHits(t, 500)
	waitFor("all published", func() bool { return lag() == 0 && age() == 0 })
	st, err := os.Stat(b.log)
	if err != nil {
		t.Fatal(err)
	}

	b.nats.Stop()
	appendLines(t, b.log, b.lines[500:600])
	st2, err := os.Stat(b.log)
	if err != nil {
		t.Fatal(err)
	}
	written := float64(st2.Size() - st.Size())
	waitFor("JetStream away", func() bool { return lag() == written && age() >= 0.5 })

	b.nats.Restart(t)
	b.waitHits(t, 600)
	waitFor("JetStream back", func() bool { return lag() == 0 && age() == 0 })

	// An incomplete last line is lag, but no line waits to be published.
	writeLines(t, b.log, b.lines[600:601], false)
	waitFor("incomplete line", func() bool { return lag() == float64(len(b.lines[600])) && age() == 0 })
}
