package load_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/pipeline/load"
)

// Emptying the database and replaying the whole stream restores the same
// counts; replaying over data that is already there changes nothing.
func TestReplayRebuildsEmptiedDatabase(t *testing.T) {
	b := setup(t)
	b.publish(t, 40, 250)
	stop := b.run(t, b.ch.Hits())
	b.waitCount(t, 10_000)
	stop()

	for _, table := range []string{"hits", "page_minutes"} {
		b.chSrv.Query(t, "TRUNCATE TABLE pagewatch."+table)
	}
	if n, _ := b.ch.Hits().HitCount(context.Background()); n != 0 {
		t.Fatalf("%d hits after truncating", n)
	}
	for round := 0; round < 2; round++ {
		b.replay(t, time.Time{})
		b.waitCount(t, 10_000)
		b.assertPageCount(t, 10_000)
	}
}

// A replay from a time loads only what was published since.
func TestReplayFromTime(t *testing.T) {
	b := setup(t)
	b.publish(t, 10, 100)
	time.Sleep(1100 * time.Millisecond)
	from := time.Now()
	b.publish(t, 10, 100)
	b.replay(t, from)
	b.waitCount(t, 1000)
}

// replay runs a replay to its end, which must come by itself.
func (b *bundle) replay(t *testing.T, from time.Time) {
	t.Helper()
	l, err := load.NewReplay(b.cfg, load.Deps{Bus: b.bus, Store: b.ch.Hits(), Logger: b.logger, Registry: prometheus.NewRegistry()}, from)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("replay did not finish by itself")
	}
}

func TestParseReplayFrom(t *testing.T) {
	now := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	cases := map[string]time.Time{
		"start":                now.AddDate(-100, 0, 0),
		"2026-11-21T08:00:00Z": now.Add(-24 * time.Hour),
		"24h":                  now.Add(-24 * time.Hour),
	}
	for in, want := range cases {
		got, err := load.ParseReplayFrom(in, now)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if in == "start" {
			if !got.IsZero() {
				t.Fatalf("start: %v", got)
			}
			continue
		}
		if !got.Equal(want) {
			t.Fatalf("%q: %v, want %v", in, got, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "-5h", "2026-11-21"} {
		if _, err := load.ParseReplayFrom(bad, now); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}
