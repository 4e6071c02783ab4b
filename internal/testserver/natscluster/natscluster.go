// Package natscluster runs a real NATS cluster for tests: nats-server
// processes with JetStream, clustered on loopback (or one standalone
// server), each with its store in a temp dir, that a test can SIGKILL,
// SIGSTOP, restart one by one, and take back to a snapshot of its store.
// The nats-server binary is built from the module pagewatch already
// depends on, so nothing needs installing.
package natscluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/internal/freeport"
	"github.com/pagewatch/pagewatch/internal/modroot"
	"github.com/pagewatch/pagewatch/internal/testcheck"
)

// Cluster is n nats-server processes routed to each other.
type Cluster struct {
	Nodes []*Node
	// URL lists every node's client URL, comma-separated, as nats.go and
	// nats.url take it: clients move to another node when theirs goes.
	URL string
	bin string
}

// Node is one nats-server process.
type Node struct {
	Name        string
	URL         string
	ClientPort  int
	ClusterPort int
	// MonitorPort serves nats-server's /healthz, which WaitReady asks.
	MonitorPort int
	dir, config string
	log         *os.File

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

var (
	buildMu sync.Mutex
	built   = map[string]error{}
)

// Build builds nats-server into dir once per test process and returns its
// path.
func Build(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "nats-server")
	buildMu.Lock()
	defer buildMu.Unlock()
	err, ok := built[bin]
	if !ok {
		cmd := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2")
		cmd.Dir = modroot.Must(t)
		if out, e := cmd.CombinedOutput(); e != nil {
			err = fmt.Errorf("go build nats-server: %w\n%s", e, out)
		}
		built[bin] = err
	}
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Start runs n nodes from the nats-server at bin (see Build) until the
// test ends, and waits until JetStream answers through every node.
func Start(t testing.TB, n int, bin string) *Cluster {
	t.Helper()
	return StartWith(t, n, bin, Options{})
}

// Options vary the servers Start runs.
type Options struct {
	// Standalone runs one server with no cluster block (n must be 1):
	// JetStream as a single-node deployment runs it, not a cluster of one.
	Standalone bool
	// JetStream is added to each server's jetstream block, e.g.
	// "sync_interval: always".
	JetStream string
}

// StartWith is Start with options.
func StartWith(t testing.TB, n int, bin string, o Options) *Cluster {
	t.Helper()
	if o.Standalone && n != 1 {
		t.Fatalf("natscluster: a standalone server is one node, not %d", n)
	}
	if _, err := os.Stat(bin); err != nil {
		testcheck.SkipOutsideCI(t, fmt.Sprintf("natscluster: no nats-server at %s: %v", bin, err))
	}
	c := &Cluster{bin: bin}
	base := t.TempDir()
	for i := range n {
		c.Nodes = append(c.Nodes, &Node{Name: fmt.Sprintf("n%d", i+1), ClientPort: freeport.TCP(t), ClusterPort: freeport.TCP(t), MonitorPort: freeport.TCP(t), dir: filepath.Join(base, fmt.Sprintf("n%d", i+1))})
	}
	var routes, urls []string
	for _, nd := range c.Nodes {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", nd.ClusterPort))
		nd.URL = fmt.Sprintf("nats://127.0.0.1:%d", nd.ClientPort)
		urls = append(urls, nd.URL)
	}
	c.URL = strings.Join(urls, ",")
	for _, nd := range c.Nodes {
		if err := os.MkdirAll(nd.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		nd.config = filepath.Join(nd.dir, "nats.conf")
		conf := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
http: 127.0.0.1:%d
jetstream {
  store_dir: %q
  max_memory_store: 256MB
  max_file_store: 4GB
  %s
}
`, nd.Name, nd.ClientPort, nd.MonitorPort, nd.store(), o.JetStream)
		if !o.Standalone {
			conf += fmt.Sprintf(`cluster {
  name: pagewatch-test
  listen: 127.0.0.1:%d
  routes: [%s]
}
`, nd.ClusterPort, strings.Join(routes, ", "))
		}
		if err := os.WriteFile(nd.config, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(nd.dir, "nats.log"))
		if err != nil {
			t.Fatal(err)
		}
		nd.log = f
		t.Cleanup(func() { _ = f.Close() })
	}
	for _, nd := range c.Nodes {
		c.startNode(t, nd)
	}
	t.Cleanup(func() {
		for _, nd := range c.Nodes {
			nd.kill()
		}
		if t.Failed() {
			for _, nd := range c.Nodes {
				out, _ := os.ReadFile(filepath.Join(nd.dir, "nats.log"))
				t.Logf("natscluster: %s log (last 4 KiB):\n%s", nd.Name, tail(out, 4096))
			}
		}
	})
	c.WaitReady(t, 60*time.Second)
	return c
}

func (c *Cluster) startNode(t testing.TB, nd *Node) {
	t.Helper()
	nd.mu.Lock()
	defer nd.mu.Unlock()
	cmd := exec.Command(c.bin, "-c", nd.config)
	cmd.Stdout, cmd.Stderr = nd.log, nd.log
	if err := cmd.Start(); err != nil {
		t.Fatalf("natscluster: start %s: %v", nd.Name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	nd.cmd, nd.done = cmd, done
}

// WaitReady waits until every running node is healthy as nats-server's
// /healthz says (what a Kubernetes readiness probe asks): JetStream is
// current with the meta leader and every stream and consumer replica on
// the node has caught up. A JetStream request alone is answered by a node
// restarted a moment before, so a "rolling" restart that waited for that
// restarted all three nodes within 0.1 s.
func (c *Cluster) WaitReady(t testing.TB, within time.Duration) {
	t.Helper()
	client := http.Client{Timeout: 2 * time.Second}
	for _, nd := range c.Nodes {
		if !nd.running() {
			continue
		}
		testcheck.Eventually(t, within, nd.Name+"'s /healthz", func() error {
			resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", nd.MonitorPort))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("/healthz %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
			}
			return nil
		})
	}
	// /healthz is ok once a node is current with the meta leader, which
	// needs only the system account's route to it: a route of the pool
	// between two other nodes may still be missing (two nodes that dialled
	// each other at once close both as duplicates and retry a second
	// later). A JetStream answer sent over that missing route is lost, and
	// its request waits out its whole context.
	for _, nd := range c.Nodes {
		if !nd.running() {
			continue
		}
		testcheck.Eventually(t, within, nd.Name+"'s routes to every running node", func() error {
			return c.meshed(&client, nd)
		})
	}
}

// routesPerPeer is how many routes a node keeps to each other node:
// nats-server's default pool of 3, plus the system account's own.
const routesPerPeer = 3 + 1

// meshed returns nil once nd's /routez lists routesPerPeer routes to
// every other running node.
func (c *Cluster) meshed(client *http.Client, nd *Node) error {
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/routez", nd.MonitorPort))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var rz struct {
		Routes []struct {
			RemoteName string `json:"remote_name"`
		} `json:"routes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rz); err != nil {
		return err
	}
	per := map[string]int{}
	for _, r := range rz.Routes {
		per[r.RemoteName]++
	}
	for _, peer := range c.Nodes {
		if peer != nd && peer.running() && per[peer.Name] < routesPerPeer {
			return fmt.Errorf("%d of %d routes to %s", per[peer.Name], routesPerPeer, peer.Name)
		}
	}
	return nil
}

// Kill SIGKILLs node i and waits for it to be gone.
func (c *Cluster) Kill(t testing.TB, i int) {
	t.Helper()
	c.Nodes[i].kill()
}

// Restart starts node i again, with its ports and store, after Kill.
func (c *Cluster) Restart(t testing.TB, i int) {
	t.Helper()
	c.Nodes[i].kill()
	c.startNode(t, c.Nodes[i])
}

// Stop freezes node i (SIGSTOP): it holds its connections and answers
// nothing, as a node under a long GC pause or a hung disk would.
func (c *Cluster) Stop(t testing.TB, i int) { c.Nodes[i].signal(t, syscall.SIGSTOP) }

// Continue resumes a node frozen by Stop.
func (c *Cluster) Continue(t testing.TB, i int) { c.Nodes[i].signal(t, syscall.SIGCONT) }

// Index returns the index of the node named name, or -1.
func (c *Cluster) Index(name string) int {
	for i, nd := range c.Nodes {
		if nd.Name == name {
			return i
		}
	}
	return -1
}

// StreamLeader returns the index of the node leading stream.
func (c *Cluster) StreamLeader(t testing.TB, stream string) int {
	t.Helper()
	leader := -1
	testcheck.Eventually(t, 30*time.Second, "a leader of stream "+stream, func() error {
		return withJS(c.URL, 2*time.Second, func(ctx context.Context, js jetstream.JetStream) error {
			s, err := js.Stream(ctx, stream)
			if err != nil {
				return err
			}
			info, err := s.Info(ctx)
			if err != nil {
				return err
			}
			if info.Cluster == nil || c.Index(info.Cluster.Leader) < 0 {
				return fmt.Errorf("no leader in %+v", info.Cluster)
			}
			leader = c.Index(info.Cluster.Leader)
			return nil
		})
	})
	return leader
}

// withJS runs fn, within d, with a JetStream client of its own on url,
// for a look at the cluster that must not depend on the test's other
// connections.
func withJS(url string, d time.Duration, fn func(context.Context, jetstream.JetStream) error) error {
	nc, err := nats.Connect(url, nats.Timeout(time.Second))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return fn(ctx, js)
}

// PID is the node's process id now (it changes with Restart), or 0 when
// it is not running: benchmarks read its CPU time from /proc.
func (nd *Node) PID() int {
	if !nd.running() {
		return 0
	}
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.cmd.Process.Pid
}

func (nd *Node) running() bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd == nil {
		return false
	}
	select {
	case <-nd.done:
		return false
	default:
		return true
	}
}

func (nd *Node) kill() {
	nd.mu.Lock()
	cmd, done := nd.cmd, nd.done
	nd.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // a stopped process dies only once resumed
	_ = cmd.Process.Kill()
	<-done
}

func (nd *Node) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd == nil {
		t.Fatalf("natscluster: %s is not running", nd.Name)
	}
	if err := nd.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("natscluster: %s: %v", nd.Name, err)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// WaitLeaders waits until every stream on the cluster has a leader that
// answers, with every replica current. A restarted node is healthy
// (WaitReady) before the streams it led have elected another leader: for
// those seconds, longer on a loaded machine, a request to such a stream
// goes unanswered, by whatever client. A test whose disruptions are over
// waits for this before it asks the streams how the run ended.
func (c *Cluster) WaitLeaders(t testing.TB, within time.Duration) {
	t.Helper()
	testcheck.Eventually(t, within, "a leader for every stream, with every replica current", c.leaders)
}

// leaders returns nil once every stream has a leader and current
// replicas, or else the first stream that has not.
func (c *Cluster) leaders() error {
	return withJS(c.URL, 5*time.Second, streamsLed)
}

func streamsLed(ctx context.Context, js jetstream.JetStream) error {
	// The names come from the meta leader's assignments; a stream's info
	// from its own leader only.
	lister := js.StreamNames(ctx)
	var names []string
	for name := range lister.Name() {
		names = append(names, name)
	}
	if err := lister.Err(); err != nil {
		return fmt.Errorf("stream names: %w", err)
	}
	for _, name := range names {
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		s, err := js.Stream(rctx, name)
		rcancel()
		if err != nil {
			return fmt.Errorf("stream %s: %w", name, err)
		}
		cl := s.CachedInfo().Cluster
		if cl == nil || cl.Leader == "" {
			return fmt.Errorf("stream %s: no leader", name)
		}
		for _, p := range cl.Replicas {
			if !p.Current || p.Offline {
				return fmt.Errorf("stream %s: replica %s not current (leader %s)", name, p.Name, cl.Leader)
			}
		}
	}
	return nil
}
