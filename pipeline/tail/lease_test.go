package tail_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/testcheck"
)

// writer appends lines to path, a few every millisecond or so, until all
// are written; wait returns once they are.
func writer(t *testing.T, path string, lines [][]byte) (wait func()) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < len(lines); i += 5 {
			appendLines(t, path, lines[i:min(i+5, len(lines))])
			time.Sleep(time.Millisecond)
		}
	}()
	return wg.Wait
}

// Two tailers with different instance names on one file: one publishes,
// the other stands by; when the first stops, the second takes over
// within the lease's TTL, where the first stopped. Every line is
// published once, on the one subject of the file.
func TestTwoInstancesOneFile(t *testing.T) {
	b := setup(t)
	b.cfg.LeaseTTL = 2 * time.Second
	appendLines(t, b.log, b.lines[:1000])
	cfgA, cfgB := b.cfg, b.cfg
	cfgA.Instance, cfgB.Instance = "a", "b"
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	stopA := b.runTailer(t, cfgA, regA)
	b.waitHits(t, 1000)
	stopB := b.runTailer(t, cfgB, regB)
	defer stopB()
	testcheck.Eventually(t, 5*time.Second, "b standing by", func() bool { return value(t, regB, "pagewatch_ingest_tail_standby_files") == 1 })

	wait := writer(t, b.log, b.lines[1000:])
	time.Sleep(500 * time.Millisecond) // lines arriving while a publishes
	stopA()
	stoppedAt := time.Now()
	testcheck.Eventually(t, b.cfg.LeaseTTL, "b takes over", func() bool { return value(t, regB, "pagewatch_ingest_tail_standby_files") == 0 })
	t.Logf("b took over %s after a stopped", time.Since(stoppedAt).Round(time.Millisecond))
	wait()
	b.waitHits(t, len(b.lines))
	time.Sleep(200 * time.Millisecond)
	stopB()
	b.exactly(t, len(b.lines), readLog(t, b.log))
	// The file's subject is the first publisher's, for both.
	b.counts(t, map[string]int{b.subject("a", b.log): len(b.lines)})
}

// A holder that loses its lease (here: taken by another holder, which
// then dies) stops publishing and stands by; a tailer takes the file over
// once that lease lapses, and the counts stay exact.
func TestLeaseLostStopsPublishing(t *testing.T) {
	b := setup(t)
	b.cfg.LeaseTTL = 2 * time.Second
	cfgA, cfgB := b.cfg, b.cfg
	cfgA.Instance, cfgB.Instance = "a", "b"
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	appendLines(t, b.log, b.lines[:500])
	stopA := b.runTailer(t, cfgA, regA)
	defer stopA()
	b.waitHits(t, 500)
	stopB := b.runTailer(t, cfgB, regB)
	defer stopB()
	testcheck.Eventually(t, 5*time.Second, "b standing by", func() bool { return value(t, regB, "pagewatch_ingest_tail_standby_files") == 1 })

	wait := writer(t, b.log, b.lines[500:])
	time.Sleep(200 * time.Millisecond)
	kv, err := b.bus.KV(context.Background(), bus.BucketTailLeases, b.cfg.LeaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.Keys(context.Background())
	if err != nil || len(keys) != 1 {
		t.Fatalf("leases: %v %v", keys, err)
	}
	// Another host's tailer: never taken as gone, lapses after the TTL.
	if _, err := kv.Put(context.Background(), keys[0], []byte("instance=x host=elsewhere pid=1 pidns=pid:[1]/0")); err != nil {
		t.Fatal(err)
	}
	testcheck.Eventually(t, b.cfg.LeaseTTL, "a stops and stands by", func() bool {
		return value(t, regA, "pagewatch_ingest_tail_leases_lost_total") == 1 && value(t, regA, "pagewatch_ingest_tail_standby_files") == 1
	})
	testcheck.Eventually(t, 3*b.cfg.LeaseTTL, "a or b takes over", func() bool {
		return value(t, regA, "pagewatch_ingest_tail_standby_files")+value(t, regB, "pagewatch_ingest_tail_standby_files") == 1
	})
	wait()
	b.waitHits(t, len(b.lines))
	time.Sleep(200 * time.Millisecond)
	stopA()
	stopB()
	b.exactly(t, len(b.lines), readLog(t, b.log))
}

// The lease of a tailer killed on this host is taken at once by the next
// one, not after its TTL.
func TestLeaseOfDeadProcessTakenAtOnce(t *testing.T) {
	b := setup(t)
	b.cfg.LeaseTTL = time.Minute
	appendLines(t, b.log, b.lines[:300])
	stop := b.runTailer(t, b.cfg, prometheus.NewRegistry())
	b.waitHits(t, 300)
	stop()

	// What a killed tailer leaves: its lease, naming a pid that is gone.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		testcheck.SkipOutsideCI(t, fmt.Sprintf("cannot run true(1) to get a pid that is gone: %v (apt-get install coreutils)", err))
	}
	host, _ := os.Hostname()
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		testcheck.SkipOutsideCI(t, fmt.Sprintf("no pid namespace (/proc/self/ns/pid) to tell a dead process by: %v", err))
	}
	kv, err := b.bus.KV(context.Background(), bus.BucketTailLeases, b.cfg.LeaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.Keys(context.Background())
	if err == nil || len(keys) != 0 {
		t.Fatalf("leases after a clean stop: %v, %v", keys, err)
	}
	recs, err := b.bus.KV(context.Background(), bus.BucketTailFiles, b.bus.HitsMaxAge())
	if err != nil {
		t.Fatal(err)
	}
	fileKeys, err := recs.Keys(context.Background())
	if err != nil || len(fileKeys) != 1 {
		t.Fatalf("file records: %v, %v", fileKeys, err)
	}
	owner := fmt.Sprintf("instance=test host=%s pid=%d pidns=%s/1", host, dead.Process.Pid, ns)
	if _, err := kv.Create(context.Background(), fileKeys[0], []byte(owner)); err != nil {
		t.Fatal(err)
	}
	appendLines(t, b.log, b.lines[300:600])
	started := time.Now()
	stop = b.runTailer(t, b.cfg, prometheus.NewRegistry())
	b.waitHits(t, 600)
	stop()
	if d := time.Since(started); d > 10*time.Second {
		t.Fatalf("took %s to take over a dead process's lease", d)
	}
}
