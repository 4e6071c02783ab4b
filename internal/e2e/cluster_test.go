package e2e

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/testserver/natscluster"
)

// TestClusterNATSNodesFailMidIngest runs ingest tail and ingest load
// against a 3-node NATS cluster (streams and buckets at replicas 3) while
// real lines are appended, and takes the cluster's nodes away under them
// one way after another: the hits stream's leader SIGKILLed and
// restarted, a node frozen (SIGSTOP) for 20 s, then every node restarted
// in turn. Every line must be in ClickHouse exactly once, and the
// subject's byte ranges must run from 0 to the file's end with no gap and
// no overlap: nothing lost, nothing published twice.
func TestClusterNATSNodesFailMidIngest(t *testing.T) {
	const (
		passes   = 6
		writeFor = 50 * time.Second
	)
	began := time.Now()
	cl := natscluster.Start(t, 3, natscluster.Build(t, binaries(t)))
	b := setupWith(t, setupOptions{rules: "    []", load: bigLoad, worker: defaultWorker, cluster: cl})
	src := newRepeatedLog(t, passes)
	bb := b.hitsBus(t)
	stream := b.hitsStream(t, bb.HitsStreamName())
	subject := bb.HitsSubject("e2e", bus.Key(b.log))
	seed := uint64(time.Now().UnixNano())
	t.Logf("%d lines (%d bytes), seed %d", src.lines(), src.size(), seed)

	loader := b.start(t, "ingest", "load")
	tailer := b.start(t, "ingest", "tail")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app := &appender{src: src, path: b.log}
	wrote := make(chan error, 1)
	writeBegan := time.Now()
	go func() {
		wrote <- app.run(ctx, rand.New(rand.NewPCG(seed, 9)), float64(src.size())/writeFor.Seconds())
	}()
	at := func(pct int) { time.Sleep(time.Until(writeBegan.Add(writeFor * time.Duration(pct) / 100))) }
	progress := func(what string) {
		t.Logf("%s at %s: %.0f%% written, %d hits loaded", what, time.Since(writeBegan).Round(100*time.Millisecond),
			100*float64(app.written.Load())/float64(src.size()), b.hitCount(t))
	}

	at(10)
	leader := cl.StreamLeader(t, bb.HitsStreamName())
	progress("SIGKILL of " + cl.Nodes[leader].Name + ", the hits stream's leader,")
	cl.Kill(t, leader)
	time.Sleep(3 * time.Second)
	cl.Restart(t, leader)
	cl.WaitReady(t, 60*time.Second)
	progress(cl.Nodes[leader].Name + " back")

	at(25)
	frozen := (cl.StreamLeader(t, bb.HitsStreamName()) + 1) % len(cl.Nodes)
	progress("SIGSTOP of " + cl.Nodes[frozen].Name)
	cl.Stop(t, frozen)
	time.Sleep(20 * time.Second)
	cl.Continue(t, frozen)
	progress("SIGCONT of " + cl.Nodes[frozen].Name)

	at(70)
	for i := range cl.Nodes {
		progress("restart of " + cl.Nodes[i].Name)
		cl.Restart(t, i)
		cl.WaitReady(t, 60*time.Second)
	}
	progress("rolling restart done")

	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	waitPublished(t, stream, subject, src.size(), 2*time.Minute)
	b.waitHits(t, src.lines(), 2*time.Minute)
	time.Sleep(time.Second) // nothing more may arrive
	alive(t, tailer)
	alive(t, loader)
	sf := checkSubject(t, stream, subject)
	if sf.lines != src.lines() || sf.end != src.size() {
		t.Errorf("the subject's messages carry %d lines up to byte %d; the file has %d lines, %d bytes", sf.lines, sf.end, src.lines(), src.size())
	}
	inserted := b.checkRepeatedLog(t, src)
	t.Logf("%d lines, every one in ClickHouse once (%d rows inserted, %d copies from batches loaded twice); %d messages on the subject, byte ranges contiguous from 0 to %d; test took %s",
		src.lines(), inserted, inserted-src.lines(), sf.msgs, sf.end, time.Since(began).Round(time.Millisecond))
}
