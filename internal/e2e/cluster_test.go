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
	killAndRestart(t, cl, cl.StreamLeader(t, bb.HitsStreamName()), "the hits stream's leader", progress)
	at(25)
	freeze(t, cl, (cl.StreamLeader(t, bb.HitsStreamName())+1)%len(cl.Nodes), "", progress)
	at(70)
	rollingRestart(t, cl, progress)

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

// killAndRestart SIGKILLs node i (what names its role, for the log) and
// starts it again 3 s later, until it is healthy.
func killAndRestart(t *testing.T, cl *natscluster.Cluster, i int, what string, progress func(string)) {
	t.Helper()
	progress("SIGKILL of " + cl.Nodes[i].Name + ", " + what + ",")
	cl.Kill(t, i)
	time.Sleep(3 * time.Second)
	cl.Restart(t, i)
	cl.WaitReady(t, 60*time.Second)
	progress(cl.Nodes[i].Name + " back")
}

// freeze SIGSTOPs node i for 20 s, as a long GC pause or a hung disk
// would, then resumes it.
func freeze(t *testing.T, cl *natscluster.Cluster, i int, what string, progress func(string)) {
	t.Helper()
	if what != "" {
		what = ", " + what + ","
	}
	progress("SIGSTOP of " + cl.Nodes[i].Name + what)
	cl.Stop(t, i)
	time.Sleep(20 * time.Second)
	cl.Continue(t, i)
	progress("SIGCONT of " + cl.Nodes[i].Name)
}

// rollingRestart restarts every node in turn, each waited for until its
// /healthz says it has caught up, and then waits until every stream has
// a leader again: the last node's /healthz is OK before the streams it
// led have elected another (4.5 s on a loaded 2-core machine), and a
// test that then asks such a stream how the run ended gets no answer.
func rollingRestart(t *testing.T, cl *natscluster.Cluster, progress func(string)) {
	t.Helper()
	for i := range cl.Nodes {
		progress("restart of " + cl.Nodes[i].Name)
		cl.Restart(t, i)
		cl.WaitReady(t, 60*time.Second)
	}
	progress("rolling restart done")
	cl.WaitLeaders(t, 2*time.Minute)
	progress("every stream led again")
}
