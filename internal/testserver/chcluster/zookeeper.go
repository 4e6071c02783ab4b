package chcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/freeport"
	"github.com/pagewatch/pagewatch/internal/testcheck"
)

// zookeeperJar is Debian's zookeeper package; its manifest names every
// jar it needs, so it is the whole class path.
const zookeeperJar = "/usr/share/java/zookeeper.jar"

const zkInstallHint = "apt-get install zookeeper default-jre-headless (Debian; .ci/install-test-deps does it)"

// ZooKeeper is one standalone ZooKeeper server.
type ZooKeeper struct {
	Addr string // client host:port on 127.0.0.1
	Dir  string

	java string
	port int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// newZooKeeper writes a standalone config in a temporary directory; Launch
// starts it.
func newZooKeeper(t testing.TB) *ZooKeeper {
	t.Helper()
	java := testcheck.RequireTool(t, "java", zkInstallHint)
	if _, err := os.Stat(zookeeperJar); err != nil {
		testcheck.Require(t, false, "ZooKeeper ("+zookeeperJar+")", zkInstallHint)
	}
	port, err := freeport.One()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	z := &ZooKeeper{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Dir: dir, java: java, port: port}
	// A short tick: sessions of a killed server's clients expire in
	// seconds, and so do the replicas' ephemeral "is active" nodes.
	cfg := fmt.Sprintf(`tickTime=500
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
maxClientCnxns=0
minSessionTimeout=1000
maxSessionTimeout=10000
admin.enableServer=false
4lw.commands.whitelist=srvr
`, filepath.Join(dir, "data"), port)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(z.Kill)
	return z
}

// Launch starts ZooKeeper and waits until it serves requests.
func (z *ZooKeeper) Launch() error {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.cmd != nil {
		return errors.New("zookeeper already running")
	}
	out, err := os.OpenFile(filepath.Join(z.Dir, "zookeeper.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("zookeeper log: %w", err)
	}
	// C1 only and the serial collector: a test's ZooKeeper is tiny, and
	// this halves its start on a small machine.
	cmd := exec.Command(z.java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
		"-cp", zookeeperJar, "org.apache.zookeeper.server.quorum.QuorumPeerMain", "zoo.cfg")
	cmd.Dir = z.Dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("start zookeeper: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(done)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !z.serving() {
		select {
		case <-done:
			return fmt.Errorf("zookeeper exited at start; see %s", out.Name())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			return fmt.Errorf("zookeeper on %s not ready in 30 s; see %s", z.Addr, out.Name())
		}
	}
	z.cmd, z.done = cmd, done
	return nil
}

// serving asks "srvr": unlike "ruok", which answers as soon as the port
// is open, it reports a version only once the server takes sessions
// (before that, it closes a client's handshake, which 18.16 survives
// badly).
func (z *ZooKeeper) serving() bool {
	c, err := net.DialTimeout("tcp", z.Addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return false
	}
	out, _ := io.ReadAll(c)
	return bytes.HasPrefix(out, []byte("Zookeeper version"))
}

// Kill SIGKILLs ZooKeeper; its data stays for Launch. Safe to repeat.
func (z *ZooKeeper) Kill() {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.cmd == nil {
		return
	}
	_ = syscall.Kill(-z.cmd.Process.Pid, syscall.SIGKILL)
	<-z.done
	z.cmd = nil
}

// Restart kills ZooKeeper and starts it again on the same port and data.
func (z *ZooKeeper) Restart(t testing.TB) {
	t.Helper()
	z.Kill()
	if err := z.Launch(); err != nil {
		t.Fatal(err)
	}
}
