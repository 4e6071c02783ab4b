package sweep

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
)

// TestSweepJudgesAgainWhatNATSForgot: NATS comes back from a power cut
// without its last acknowledged writes (it acknowledges before they are
// on disk): here, the sweep that fired milestone 200 and the job it
// published. The sweeper's mirror of its states still says 200 fired, so
// without a reload nothing would fire it again, and every write of the
// page would be refused against a revision the server no longer has.
// The next sweep must find that NATS forgot, reload the states from it,
// and fire 200 again; then nothing more.
func TestSweepJudgesAgainWhatNATSForgot(t *testing.T) {
	logger := testenv.Logger(t)
	nb, ns := testenv.NATS(t, logger)
	c, srv := testenv.ClickHouse(t, logger)
	b := &bundle{bus: nb, ch: c, chSrv: srv, cfg: DefaultConfig(), logger: logger}
	b.cfg.Rules = []rules.Rule{rule("launch", "/launch", "all", 100, 200, 300)}
	s := b.sweeper(t, nil)
	at := time.Now().Add(-time.Minute)

	b.addHits(t, "/launch", 120, at)
	b.sweep(t, s)
	snap := copyStore(t, ns, "")
	b.addHits(t, "/launch", 100, at)
	b.sweepAfterRestart(t, s)
	if got := fired(b.jobs(t)); !slices.Equal(got, []string{"launch 100 120", "launch 200 220"}) {
		t.Fatalf("before NATS forgets: jobs %v", got)
	}

	copyStore(t, ns, snap) // the power cut
	if got := fired(b.jobs(t)); !slices.Equal(got, []string{"launch 100 120"}) {
		t.Fatalf("NATS did not forget the second sweep: jobs %v", got)
	}
	b.sweepAfterRestart(t, s)
	b.sweep(t, s)
	if got := fired(b.jobs(t)); !slices.Equal(got, []string{"launch 100 120", "launch 200 220"}) {
		t.Fatalf("after NATS forgot: jobs %v, want milestone 200 fired again (once)", got)
	}
	// The page's state moves on: the next milestone's write is not
	// refused against a revision NATS forgot.
	b.addHits(t, "/launch", 100, at)
	b.sweep(t, s)
	if got := fired(b.jobs(t)); len(got) != 3 || got[2] != "launch 300 320" {
		t.Fatalf("jobs %v, want milestone 300 too", got)
	}
}

// copyStore stops the server and, with from "", copies its store into a
// new directory it returns; else replaces its store with from's copy.
// Then it starts the server again.
func copyStore(t *testing.T, ns *natstest.Server, from string) string {
	t.Helper()
	ns.Stop()
	to := ns.Dir
	if from == "" {
		from, to = ns.Dir, t.TempDir()
	} else if err := os.RemoveAll(to); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
	ns.Restart(t)
	return to
}

// sweepAfterRestart sweeps once the sweeper's connection is back.
func (b *bundle) sweepAfterRestart(t *testing.T, s *Sweeper) {
	t.Helper()
	testcheck.Eventually(t, 30*time.Second, "a sweep after NATS restarted", func() error {
		return s.Sweep(context.Background())
	})
}
