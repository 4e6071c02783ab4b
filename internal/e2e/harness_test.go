// Package e2e runs the three built daemons as real processes against real
// NATS, ClickHouse and SMTP servers.
package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/pagewatch/pagewatch/internal/modroot"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/chcluster"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/internal/testserver/natscluster"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
	"github.com/pagewatch/pagewatch/internal/testserver/smtptest"
)

var (
	buildOnce sync.Once
	binDir    string // made by TestMain, removed when the tests end
	buildErr  error
)

// TestMain gives binaries a directory to build into and removes it, with
// the daemons in it (about 100 MB), when the tests end or are
// interrupted (SIGINT, SIGTERM). Only a run that panics or times out
// leaves it behind, as pagewatch-e2e-bin-* in the temp directory.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pagewatch-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	binDir = dir
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-interrupted
		os.RemoveAll(dir)
		fmt.Fprintf(os.Stderr, "e2e: %v: removed %s\n", sig, dir)
		os.Exit(1)
	}()
	code := m.Run()
	signal.Stop(interrupted)
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
	}
	os.Exit(code)
}

// binaries builds cmd/... once per test binary run, into binDir.
func binaries(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		cmd := exec.Command("go", "build", "-o", binDir+"/", "./cmd/...")
		cmd.Dir = modroot.Must(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

type bundle struct {
	dir    string
	bin    string
	log    string // the tailed access log
	config string
	nats   *natstest.Server
	// cluster, when set, is the NATS the daemons use instead of nats.
	cluster *natscluster.Cluster
	ch      *clickhousetest.Server
	// chCluster, when set, is the ClickHouse the daemons use (in cluster
	// mode, every node in clickhouse.addr); ch is then its first node.
	chCluster *chcluster.Cluster
	// natsUser and natsPassword log the test's own clients in.
	natsUser, natsPassword string
	smtp                   *smtptest.Server

	mu     sync.Mutex
	starts map[string]int // runs per daemon name, for log file names
}

// loadConfig is the ingest.load section setup writes.
type loadConfig struct {
	BatchRows         int
	BatchAge, AckWait string // YAML durations, e.g. "200ms"
	// RetryMax, if set, caps the insert backoff (retry_max), so a loader
	// finds a server that is back sooner.
	RetryMax string
}

// retryMax is the retry_max line, if any, to follow ack_wait.
func (l loadConfig) retryMax() string {
	if l.RetryMax == "" {
		return ""
	}
	return "\n    retry_max: " + l.RetryMax
}

// defaultLoad suits the small tests: batches of a few tailer messages.
var defaultLoad = loadConfig{BatchRows: 5000, BatchAge: "200ms", AckWait: "10s"}

// workerConfig is the worker section setup writes.
type workerConfig struct {
	Concurrency, Prefetch int // 0 leaves the built-in default
	// YAML durations, e.g. "3s".
	LockTTL, DeferDelay, AckWait, DrainTimeout string
	ClaimTimeout                               string // "" leaves the default
	// NoRateLimit turns both mail rate limits off.
	NoRateLimit bool
}

// defaultWorker suits the small tests.
var defaultWorker = workerConfig{LockTTL: "5s", DeferDelay: "200ms", AckWait: "20s", DrainTimeout: "5s"}

func (w workerConfig) yaml() string {
	s := fmt.Sprintf("  lock_ttl: %s\n  defer_delay: %s\n  ack_wait: %s\n  drain_timeout: %s\n",
		w.LockTTL, w.DeferDelay, w.AckWait, w.DrainTimeout)
	if w.ClaimTimeout != "" {
		s += fmt.Sprintf("  claim_timeout: %s\n", w.ClaimTimeout)
	}
	if w.Concurrency > 0 {
		s += fmt.Sprintf("  concurrency: %d\n", w.Concurrency)
	}
	if w.Prefetch > 0 {
		s += fmt.Sprintf("  prefetch: %d\n", w.Prefetch)
	}
	if w.NoRateLimit {
		s += "  rate_limit: {global: {rate: 0, per: 0s, burst: 0}, per_recipient: {rate: 0, per: 0s, burst: 0}}\n"
	}
	return s
}

// setupOptions is everything setupWith can vary.
type setupOptions struct {
	rules string // the YAML list under sweeper.rules
	// pages is ingest.tail.pages. Empty: every filter off, so that lines
	// in equal hits out, which is what the exactly-once tests count.
	pages  string
	load   loadConfig
	worker workerConfig
	smtp   []smtptest.Option
	// nats changes the NATS server's options (users, TLS); natsUser and
	// natsPassword are then what the test's own clients log in with.
	nats                   func(*server.Options)
	natsUser, natsPassword string
	// cluster: the daemons use this NATS cluster, with streams and
	// buckets at replicas 3, instead of a server of their own.
	cluster *natscluster.Cluster
	// chCluster: the daemons use this ClickHouse cluster in cluster mode
	// instead of a server of their own.
	chCluster *chcluster.Cluster
}

// clickhouseSection is the config's clickhouse line.
func (b *bundle) clickhouseSection() string {
	if c := b.chCluster; c != nil {
		addrs, _ := json.Marshal(c.Addrs())
		httpAddrs, _ := json.Marshal(c.HTTPAddrs())
		return fmt.Sprintf("clickhouse: {addr: %s, http_addr: %s, cluster: %s}", addrs, httpAddrs, c.Name)
	}
	// Hits go over HTTP, as the lean insert path (clickhouse.http_addr).
	return fmt.Sprintf("clickhouse: {addr: [%q], http_addr: [%q]}", b.ch.Addr, b.ch.HTTPAddr)
}

// natsURL is where the daemons and the test's own clients find NATS.
func (b *bundle) natsURL() string {
	if b.cluster != nil {
		return b.cluster.URL
	}
	return b.nats.URL
}

// natsSection is the config's nats line; tests that add credentials
// (secrets_test.go) find it in this form.
func (b *bundle) natsSection() string {
	if r := b.natsReplicas(); r > 1 {
		return fmt.Sprintf("nats: {url: %q, replicas: %d}", b.natsURL(), r)
	}
	return fmt.Sprintf("nats: {url: %q}", b.natsURL())
}

// natsReplicas is nats.replicas for the daemons and the test's clients.
func (b *bundle) natsReplicas() int {
	if b.cluster != nil {
		return len(b.cluster.Nodes)
	}
	return 1
}

// setup starts the servers and writes a config for the daemons; rules is
// the YAML list under sweeper.rules.
func setup(t testing.TB, rules string) *bundle {
	t.Helper()
	return setupLoad(t, rules, defaultLoad)
}

// setupLoad is setup with the loader's batching settings given.
func setupLoad(t testing.TB, rules string, load loadConfig) *bundle {
	t.Helper()
	return setupWith(t, setupOptions{rules: rules, load: load, worker: defaultWorker})
}

// setupWith is setup with the loader and worker settings and the SMTP
// server's options given.
func setupWith(t testing.TB, o setupOptions) *bundle {
	t.Helper()
	rules, load := o.rules, o.load
	pages := o.pages
	if pages == "" {
		pages = "{methods: [], statuses: [], static_extensions: [], bots: [], count_classes: []}"
	}
	b := &bundle{dir: t.TempDir(), bin: binaries(t), starts: map[string]int{}}
	if b.cluster = o.cluster; b.cluster == nil {
		b.nats = natstest.StartWith(t, o.nats)
	}
	b.natsUser, b.natsPassword = o.natsUser, o.natsPassword
	if b.chCluster = o.chCluster; b.chCluster != nil {
		b.ch = b.chCluster.Nodes[0].Server
	} else {
		b.ch = clickhousetest.Start(t)
	}
	b.smtp = smtptest.Start(t, o.smtp...)
	b.log = filepath.Join(b.dir, "access.log")
	b.config = filepath.Join(b.dir, "pagewatch.yaml")
	cfg := fmt.Sprintf(`log: {level: info}
shutdown_timeout: 15s
%s
%s
ingest:
  tail:
    listen: "127.0.0.1:0"
    instance: e2e
    inputs: [{path: %q, site: example.com}]
    pages: %s
    start_at: beginning
    poll_interval: 20ms
    batch_lines: 500
  load:
    listen: "127.0.0.1:0"
    batch_rows: %d
    batch_age: %s
    ack_wait: %s%s
    # The tests replay a 2015 log; retention would drop it.
    retention: {raw_hits_days: 0}
sweeper:
  listen: "127.0.0.1:0"
  schedule: "@every 1s"
  rules:
%s
worker:
  listen: "127.0.0.1:0"
%smail:
  transport: smtp
  from: pagewatch@example.com
  smtp: {host: %q, port: %d, tls: none}
`, b.natsSection(), b.clickhouseSection(), b.log, pages, load.BatchRows, load.BatchAge, load.AckWait, load.retryMax(), rules, o.worker.yaml(), b.smtp.Host, b.smtp.Port)
	if err := os.WriteFile(b.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

// proc is one daemon process.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *os.File
	done chan error
}

// start runs a daemon, e.g. start(t, "ingest", "tail"); its output goes to
// a file of its own (name.log, then name.2.log, ... for later runs) shown
// if the test fails.
func (b *bundle) start(t testing.TB, bin string, args ...string) *proc {
	t.Helper()
	return b.startConfig(t, b.config, bin, args...)
}

// startConfig is start with another config file.
func (b *bundle) startConfig(t testing.TB, config, bin string, args ...string) *proc {
	t.Helper()
	name := bin + " " + strings.Join(args, " ")
	if config != b.config {
		name += " (" + filepath.Base(config) + ")"
	}
	file := strings.ReplaceAll(name, " ", "_")
	b.mu.Lock()
	b.starts[name]++
	if n := b.starts[name]; n > 1 {
		file += "." + strconv.Itoa(n)
		name += " #" + strconv.Itoa(n)
	}
	b.mu.Unlock()
	out, err := os.OpenFile(filepath.Join(b.dir, file+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(b.bin, bin), append(args, "--config", config)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, out: out, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			data, _ := os.ReadFile(out.Name())
			t.Logf("--- %s output (last 3000 bytes):\n%s", name, tailBytes(data, 3000))
		}
	})
	return p
}

// stop sends SIGTERM and requires a clean exit within the shutdown deadline.
func (p *proc) stop(t testing.TB) {
	if p.done == nil {
		return // killed on purpose
	}
	select {
	case err := <-p.done:
		p.done = nil
		t.Errorf("%s exited before the test stopped it: %v", p.name, err)
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done = nil
		if err != nil {
			t.Errorf("%s: exit after SIGTERM: %v", p.name, err)
		}
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		t.Errorf("%s: still running 20s after SIGTERM", p.name)
	}
}

// kill is kill -9.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
	p.done = nil
}

func tailBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func appendLines(t testing.TB, path string, lines [][]byte) {
	t.Helper()
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
}

// hitCount is the number of distinct hits in ClickHouse.
func (b *bundle) hitCount(t testing.TB) int {
	t.Helper()
	out := b.ch.Query(t, "SELECT count() FROM (SELECT seq, line_offset FROM pagewatch.hits GROUP BY seq, line_offset)")
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("count: %q", out)
	}
	return n
}

func (b *bundle) tablesExist(t testing.TB) bool {
	return strings.TrimSpace(b.ch.Query(t, "SELECT count() FROM system.tables WHERE database = 'pagewatch' AND name = 'hits'")) == "1"
}

// waitHits waits until ClickHouse holds want hits, failing on more.
func (b *bundle) waitHits(t testing.TB, want int, timeout time.Duration) {
	t.Helper()
	testcheck.Eventually(t, timeout, fmt.Sprintf("%d hits in ClickHouse", want), func() error {
		got := -1
		if b.tablesExist(t) {
			got = b.hitCount(t)
		}
		if got > want {
			t.Fatalf("ClickHouse holds %d hits, more than the %d lines written", got, want)
		}
		if got != want {
			return fmt.Errorf("ClickHouse holds %d hits", got)
		}
		return nil
	})
}

// adminAddr is the address a daemon's /metrics, /healthz and /readyz are
// served on, read from its log (the config asks for port 0).
func (p *proc) adminAddr(t testing.TB) string {
	t.Helper()
	re := regexp.MustCompile(`admin endpoints serving.* addr=(\S+)`)
	var addr string
	testcheck.Eventually(t, 30*time.Second, p.name+" to log its admin address", func() bool {
		data, err := os.ReadFile(p.out.Name())
		if err != nil {
			t.Fatal(err)
		}
		m := re.FindSubmatch(data)
		if m != nil {
			addr = string(m[1])
		}
		return m != nil
	})
	return addr
}

// metric scrapes one unlabelled counter or gauge from a daemon's /metrics.
// The admin endpoints answer from start-up, before the daemon has built
// its parts, so a metric not served yet is waited for.
func metric(t testing.TB, addr, name string) float64 {
	t.Helper()
	var v float64
	testcheck.Eventually(t, 30*time.Second, addr+" to serve "+name, func() (ok bool) {
		v, ok = scrapeOne(t, addr, name)
		return ok
	})
	return v
}

func scrapeOne(t testing.TB, addr, name string) (float64, bool) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("scrape %s: %v", addr, err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %q", name, line)
			}
			return f, true
		}
	}
	return 0, false
}
