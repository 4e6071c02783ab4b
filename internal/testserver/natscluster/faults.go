package natscluster

import (
	"testing"
	"time"
)

// LoseNode SIGKILLs node i and restarts the others in turn, each waited
// for until healthy: a cluster running without node i whose nodes have
// not heard from it since they started (a node down through a rolling
// restart, or one that did not come back after a power cut). Such a
// cluster refuses to place a stream's replica on node i ("no suitable
// peers for placement", 10005) until it is back (Restart), where a
// cluster that saw node i go places replicas on it and runs them on the
// others meanwhile.
func (c *Cluster) LoseNode(t testing.TB, i int, within time.Duration) {
	t.Helper()
	c.Kill(t, i)
	for j := range c.Nodes {
		if j != i {
			c.Restart(t, j)
			c.WaitReady(t, within)
		}
	}
}
