package natscluster

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
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

// store is the node's JetStream store directory.
func (nd *Node) store() string { return filepath.Join(nd.dir, "store") }

// Snapshot copies node i's JetStream store into a new directory and
// returns it. The node should be frozen (Stop) or gone, so that the copy
// is of one moment: what a disk would hold if the power failed then and
// everything written to it so far had reached it.
func (c *Cluster) Snapshot(t testing.TB, i int) string {
	t.Helper()
	dst := t.TempDir()
	if err := copyTree(c.Nodes[i].store(), dst); err != nil {
		t.Fatalf("natscluster: snapshot of %s: %v", c.Nodes[i].Name, err)
	}
	return dst
}

// Restore replaces node i's store with a snapshot taken by Snapshot. The
// node must not be running (Kill it first); Restart starts it on the
// snapshot, which has forgotten whatever was written after it.
func (c *Cluster) Restore(t testing.TB, i int, snapshot string) {
	t.Helper()
	nd := c.Nodes[i]
	if nd.running() {
		t.Fatalf("natscluster: restore of %s while it runs", nd.Name)
	}
	if err := os.RemoveAll(nd.store()); err != nil {
		t.Fatal(err)
	}
	if err := copyTree(snapshot, nd.store()); err != nil {
		t.Fatalf("natscluster: restore of %s: %v", nd.Name, err)
	}
}

// copyTree copies the directory src to dst (created), files and
// directories only.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(to, info.Mode().Perm()|0o700)
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, info.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}
