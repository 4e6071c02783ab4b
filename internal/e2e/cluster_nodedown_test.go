package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/natscluster"
)

// TestClusterDaemonsStartWithANodeDown starts every daemon (tail, load,
// sweeper, worker) against a 3-node NATS cluster that runs without one of
// its nodes: it was SIGKILLed and the other two restarted since, so the
// cluster cannot place a replica of the daemons' streams and buckets
// (replicas 3) anywhere but on it, and refuses to create them ("no
// suitable peers for placement", 10005), as a cluster still forming
// does. Each daemon must wait, stay up and say on /readyz that it is not
// ready and why, for as long as the node is away; once it is back, each
// becomes ready and the pipeline works: the lines are loaded once and the
// crossing is mailed once. (A sweeper exited with that 10005 at the start
// of TestClusterNATSNodesFailMidNotify, and the worker never became ready.)
func TestClusterDaemonsStartWithANodeDown(t *testing.T) {
	const (
		down = 2
		away = 15 * time.Second // after every daemon has said why it waits
	)
	began := time.Now()
	cl := natscluster.Start(t, 3, natscluster.Build(t, binaries(t)))
	cl.LoseNode(t, down, time.Minute)
	b := setupWith(t, setupOptions{rules: rules, pages: "{}", load: defaultLoad, worker: defaultWorker, cluster: cl})
	procs := []*proc{b.start(t, "ingest", "load"), b.start(t, "ingest", "tail"), b.start(t, "sweeper"), b.start(t, "worker")}
	lines := realdata.Lines(t, realdata.ApacheLog)
	appendLines(t, b.log, lines)

	for _, p := range procs {
		addr := p.adminAddr(t)
		testcheck.Eventually(t, time.Minute, p.name+" to say why it is not ready", func() error {
			code, body := readyz(addr)
			if code == http.StatusServiceUnavailable && strings.Contains(body, "no suitable peers for placement") {
				return nil
			}
			return fmt.Errorf("/readyz %d %q", code, body)
		})
	}
	t.Logf("every daemon waiting, %s after the cluster started", time.Since(began).Round(100*time.Millisecond))
	time.Sleep(away)
	for _, p := range procs {
		alive(t, p)
		if code, body := readyz(p.adminAddr(t)); code == http.StatusOK {
			t.Errorf("%s ready with a node down: %q", p.name, body)
		} else {
			t.Logf("%s after %s: /readyz %d %q", p.name, away, code, strings.TrimSpace(body))
		}
	}
	if b.tablesExist(t) && b.hitCount(t) > 0 {
		t.Errorf("%d hits loaded while the hits stream could not be created", b.hitCount(t))
	}

	back := time.Now()
	cl.Restart(t, down)
	cl.WaitReady(t, time.Minute)
	for _, p := range procs {
		addr := p.adminAddr(t)
		testcheck.Eventually(t, 2*time.Minute, p.name+" ready", func() error {
			if code, body := readyz(addr); code != http.StatusOK {
				return fmt.Errorf("/readyz %d %q", code, body)
			}
			return nil
		})
	}
	ready := time.Since(back)
	// The default filters leave 1,876 page views of the 10,000 lines
	// (bots are published, not counted), 155 of them of "/":
	// home-milestone (150) fires; the others do not.
	b.waitHits(t, 1876, time.Minute)
	b.smtp.WaitForMessages(t, 1, time.Minute)
	time.Sleep(3 * time.Second) // three more sweeps: nothing new may fire
	if got := len(b.smtp.Messages()); got != 1 {
		t.Errorf("%d mails, want 1 (home-milestone)", got)
	}
	for _, p := range procs {
		alive(t, p)
	}
	t.Logf("every daemon ready %s after the node was back; 1,876 hits loaded and 1 mail; test took %s",
		ready.Round(100*time.Millisecond), time.Since(began).Round(100*time.Millisecond))
}
