package natscluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/natscluster"
)

// TestClusterKeepsAStreamThroughItsLeadersDeath: an R3 stream takes
// publishes before and after its leader is SIGKILLed, and holds them all.
func TestClusterKeepsAStreamThroughItsLeadersDeath(t *testing.T) {
	c := natscluster.Start(t, 3, natscluster.Build(t, t.TempDir()))
	nc, err := nats.Connect(c.URL, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// The whole test's bound: WaitReady and WaitLeaders below may take a
	// minute each on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// A JetStream request is answered at most once: one whose answer is
	// lost is asked again, not waited for a minute.
	testcheck.Eventually(t, time.Minute, "stream T created", func() error {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		defer ccancel()
		_, err := js.CreateOrUpdateStream(cctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Replicas: 3})
		return err
	})
	publish := func(n int) {
		for i := range n {
			for attempt := 0; ; attempt++ {
				pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := js.Publish(pctx, "t.x", []byte{byte(i)})
				pcancel()
				if err == nil {
					break
				}
				if attempt > 20 {
					t.Fatalf("publish %d: %v", i, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	publish(100)
	leader := c.StreamLeader(t, "T")
	c.Kill(t, leader)
	publish(100)
	c.Restart(t, leader)
	c.WaitReady(t, time.Minute)
	publish(100)
	// Once WaitLeaders returns, the stream has a leader that answers.
	c.WaitLeaders(t, time.Minute)
	s, err := js.Stream(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Cluster == nil || c.Index(info.Cluster.Leader) < 0 {
		t.Fatalf("stream info after WaitLeaders names no leader: %+v", info.Cluster)
	}
	if info.State.Msgs != 300 {
		t.Fatalf("stream holds %d messages, want 300", info.State.Msgs)
	}
}
