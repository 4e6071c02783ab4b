// Package clickhousetest starts real clickhouse-server processes for tests.
//
// Each Server gets its own temporary directory (config, data and logs), listens
// only on 127.0.0.1 on ports picked at runtime, and has a password-less
// "default" user, so several servers can run side by side and next to a
// system-wide install:
//
//	srv := clickhousetest.Start(t)
//	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{srv.Addr}})
//	...
//	srv.Query(t, "SELECT count() FROM t") // "42\n"
//
// StartWith adds a TLS native port (SecureAddr, trusted through CAFile) and
// users with passwords, for tests of how pagewatch connects in production.
//
// The server binary is taken from $PAGEWATCH_CLICKHOUSE_SERVER, else
// clickhouse-server on $PATH, else /usr/sbin/clickhouse-server, else the
// /usr/bin/clickhouse multi-binary. Without one the test is skipped, or fails
// when $CI is set, so CI can never pass without having run it.
//
// clickhouse-go v2 against the ClickHouse 18.16 of Debian works over the
// native protocol, with LZ4 or ZSTD compression, with these limits:
//   - Inserts must name their columns, e.g. PrepareBatch "INSERT INTO t (a, s)";
//     without a column list Append fails with "expected 0 arguments".
//   - Never Exec an INSERT ... VALUES (...) with inline data: 18.16 waits for
//     data blocks the client never sends, and the call hangs until ReadTimeout
//     (5 minutes by default). Use PrepareBatch, or INSERT ... SELECT.
//   - Bind parameters client-side (? or clickhouse.Named); {name:Type}
//     server-side parameters do not exist yet.
//   - 18.16 predates settings sent as strings, so the client encodes every
//     setting as a varint and only accepts Go int or bool values (not int64,
//     uint64, float64 or string); only integer or boolean settings can be sent.
//   - No AsyncInsert, DateTime64 or Protocol: clickhouse.HTTP (the client's
//     client_protocol_version URL parameter is an unknown setting to 18.16).
//     LowCardinality needs the setting allow_experimental_low_cardinality_type=1.
package clickhousetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/freeport"
	"github.com/pagewatch/pagewatch/internal/testcheck"
)

const (
	// EnvServer names an explicit server binary (clickhouse-server, or the
	// clickhouse multi-binary).
	EnvServer = "PAGEWATCH_CLICKHOUSE_SERVER"

	installHint = "apt-get install clickhouse-server clickhouse-client (Debian) or set " + EnvServer

	startTimeout = 60 * time.Second
	stopGrace    = 5 * time.Second
)

// Server is a running clickhouse-server.
type Server struct {
	Addr     string // native protocol host:port
	HTTPAddr string // HTTP interface host:port
	Dir      string // root of the server's files: config.xml, users.xml, data/, log/
	// SecureAddr is the native protocol over TLS (tcp_port_secure) and
	// CAFile the PEM of the CA that signed its certificate (for 127.0.0.1
	// and localhost); both empty unless Options.TLS.
	SecureAddr string
	// HTTPSAddr is the HTTP interface over TLS (https_port), with the
	// same certificate; empty unless Options.TLS.
	HTTPSAddr string
	CAFile    string

	argv []string // binary and leading arguments, without --config-file
	opts Options

	mu   sync.Mutex
	proc *process // nil while stopped
}

// process is one run of the server binary.
type process struct {
	cmd     *exec.Cmd
	console *os.File
	exited  chan struct{} // closed once cmd.Wait returned
	waitErr error         // valid after exited is closed
}

// Options are what StartWith adds to a plain Start.
type Options struct {
	// TLS adds a secure native port (SecureAddr) with a certificate from a
	// CA made for this server (CAFile). The plain ports stay open, so
	// Query and Addr work as usual.
	TLS bool
	// Users are accounts besides the password-less "default", allowed from
	// loopback with the default profile.
	Users []User
}

// User is a ClickHouse user with a password.
type User struct {
	Name, Password string
}

var userNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Start starts a fresh server and registers its shutdown with t.Cleanup.
// It fails the test if the server does not answer within a minute.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith starts a server like Start, with TLS and extra users.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	s := prepare(t, opts)
	// Ports are picked by binding :0 and releasing them, so another process
	// may grab one before the server binds it; a retry with new ports fixes that.
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 {
			if err = s.configure(); err != nil {
				break
			}
		}
		began := time.Now()
		if err = s.start(); err == nil {
			t.Logf("clickhouse-server ready in %v (native %s, http %s, secure %q, dir %s)",
				time.Since(began).Round(time.Millisecond), s.Addr, s.HTTPAddr, s.SecureAddr, s.Dir)
			return s
		}
		if !strings.Contains(err.Error(), "Address already in use") {
			break
		}
	}
	t.Fatalf("clickhousetest: %v", err)
	return nil
}

// Prepare writes a server's config, with its ports picked, without
// starting it, so that a caller can add files to Dir/config.d (a cluster,
// macros) that name other servers' ports before any of them starts; Launch
// starts it. Stop is registered with t.Cleanup.
func Prepare(t testing.TB, opts Options) *Server {
	t.Helper()
	return prepare(t, opts)
}

// Launch starts a server made by Prepare, or stopped, and waits until it
// answers. Unlike Start and Restart it reports failure as an error, so
// several servers can be launched from goroutines at once.
func (s *Server) Launch() error {
	if err := s.start(); err != nil {
		return fmt.Errorf("clickhousetest: %w", err)
	}
	return nil
}

func prepare(t testing.TB, opts Options) *Server {
	t.Helper()
	argv := findServer(t)
	dir := t.TempDir()
	s := &Server{Dir: dir, argv: argv, opts: opts}
	t.Cleanup(s.Stop)
	for _, u := range opts.Users {
		// The name becomes an XML element of users.xml.
		if !userNameRE.MatchString(u.Name) || u.Name == "default" {
			t.Fatalf("clickhousetest: user name %q: want letters, digits and _ (and not default)", u.Name)
		}
	}
	if opts.TLS {
		if err := s.makeCertificates(); err != nil {
			t.Fatalf("clickhousetest: %v", err)
		}
	}
	if err := s.configure(); err != nil {
		t.Fatalf("clickhousetest: %v", err)
	}
	return s
}

// Restart starts the server again with the same ports, config and data after
// Stop (it stops the server first if it is still running). It is meant for
// tests that simulate a database outage.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	began := time.Now()
	if err := s.start(); err != nil {
		t.Fatalf("clickhousetest: restart: %v", err)
	}
	t.Logf("clickhouse-server restarted in %v", time.Since(began).Round(time.Millisecond))
}

// PID is the running server's process id; 0 while it is stopped.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.cmd.Process.Pid
}

// Stop shuts the server down: SIGTERM, then SIGKILL to its process group if
// it has not exited after a few seconds. It is safe to call repeatedly and
// concurrently.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return
	}
	s.proc.stop()
	s.proc = nil
}

// Kill SIGKILLs the server's process group, as a crash or the OOM killer
// would, and waits for it to exit. Ports and data stay for Restart.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return
	}
	_ = killGroup(s.proc.cmd.Process.Pid)
	s.proc.stop() // reaps it and closes its console
	s.proc = nil
}

// Query runs sql over the HTTP interface and returns the response body
// (TabSeparated unless the query says otherwise). Any error fails the test.
func (s *Server) Query(t testing.TB, sql string) string {
	t.Helper()
	body, err := s.query(sql)
	if err != nil {
		t.Fatalf("clickhousetest: query %q: %v", sql, err)
	}
	return body
}

// TryQuery is Query returning its error instead of failing a test, for a
// server that may be down.
func (s *Server) TryQuery(sql string) (string, error) { return s.query(sql) }

// httpClient does not keep connections alive: an idle keep-alive connection
// makes the server wait keep_alive_timeout before it shuts down.
var httpClient = &http.Client{
	Transport: &http.Transport{DisableKeepAlives: true},
	Timeout:   30 * time.Second,
}

func (s *Server) query(sql string) (string, error) {
	resp, err := httpClient.Post("http://"+s.HTTPAddr+"/", "text/plain", strings.NewReader(sql))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(body))
	}
	return string(body), nil
}

// configure picks fresh ports and writes the config files.
func (s *Server) configure() error {
	ports, err := freeport.Ports(4)
	if err != nil {
		return err
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	s.HTTPAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
	p := configParams{
		Dir:      s.Dir,
		DataDir:  filepath.Join(s.Dir, "data"),
		LogDir:   filepath.Join(s.Dir, "log"),
		TCPPort:  ports[0],
		HTTPPort: ports[1],
		Users:    s.opts.Users,
	}
	if s.opts.TLS {
		s.SecureAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2]))
		s.HTTPSAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[3]))
		p.SecurePort, p.HTTPSPort = ports[2], ports[3]
		p.CertFile, p.KeyFile = filepath.Join(s.Dir, "server.crt"), filepath.Join(s.Dir, "server.key")
	}
	if err := os.MkdirAll(p.LogDir, 0o755); err != nil {
		return fmt.Errorf("create log dir: %w", err)
	}
	return writeConfig(p)
}

// start launches the binary and waits until it answers /ping. On failure the
// process is gone and the error carries the tail of the server's logs.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return errors.New("server already running")
	}

	// The server logs to files in log/; the console only gets errors that
	// happen before logging is set up, such as a malformed config.
	console, err := os.OpenFile(filepath.Join(s.Dir, "log", "console.log"),
		os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open console log: %w", err)
	}
	args := append(append([]string{}, s.argv[1:]...), "--config-file="+filepath.Join(s.Dir, "config.xml"))
	cmd := exec.Command(s.argv[0], args...)
	cmd.Dir = s.Dir
	cmd.Stdout = console
	cmd.Stderr = console
	// Newer servers fork a watchdog parent; keep a single process to signal.
	cmd.Env = append(os.Environ(), "CLICKHOUSE_WATCHDOG_ENABLE=0")
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		console.Close()
		return fmt.Errorf("start %s: %w", s.argv[0], err)
	}
	p := &process{cmd: cmd, console: console, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()

	if err := s.waitReady(p); err != nil {
		p.stop()
		return fmt.Errorf("%s did not come up: %w\n%s", strings.Join(cmd.Args, " "), err, s.logTail())
	}
	s.proc = p
	return nil
}

func (s *Server) waitReady(p *process) error {
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := httpClient.Get("http://" + s.HTTPAddr + "/ping")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				// A certificate the server cannot load costs it only the
				// secure port, not the start: check that port too.
				if err = s.secureReady(); err == nil {
					return nil
				}
			} else {
				err = fmt.Errorf("/ping: %s", resp.Status)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %w", startTimeout, err)
		}
		select {
		case <-p.exited:
			return fmt.Errorf("server exited: %v", p.waitErr) //nolint:errorlint // nil for an exit 0, which %w prints as %!w(<nil>)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (p *process) stop() {
	defer p.console.Close()
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return
	case <-time.After(stopGrace):
	}
	// The whole group, in case the server left helpers behind.
	_ = killGroup(p.cmd.Process.Pid)
	<-p.exited
}

// logTail returns the end of the error log and of the console output, which
// together explain why a server failed to start.
func (s *Server) logTail() string {
	var b strings.Builder
	for _, name := range []string{"server.err.log", "console.log"} {
		path := filepath.Join(s.Dir, "log", name)
		fmt.Fprintf(&b, "--- tail of %s ---\n%s\n", path, tail(path, 4096))
	}
	return b.String()
}

func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		if _, err := f.Seek(-n, io.SeekEnd); err != nil {
			return err.Error()
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(b))
}

// findServer returns the command prefix that runs a ClickHouse server, or
// skips/fails the test when there is none.
func findServer(t testing.TB) []string {
	t.Helper()
	if path := os.Getenv(EnvServer); path != "" {
		abs, err := exec.LookPath(path)
		if err != nil {
			t.Fatalf("clickhousetest: $%s=%q is not runnable: %v", EnvServer, path, err)
		}
		return serverArgv(abs)
	}
	for _, name := range []string{"clickhouse-server", "/usr/sbin/clickhouse-server", "/usr/bin/clickhouse"} {
		if abs, err := exec.LookPath(name); err == nil {
			return serverArgv(abs)
		}
	}
	testcheck.SkipOutsideCI(t, "clickhousetest: no ClickHouse server binary found; "+installHint)
	return nil
}

// serverArgv runs the multi-binary (named just "clickhouse") in server mode.
func serverArgv(path string) []string {
	if filepath.Base(path) == "clickhouse" {
		return []string{path, "server"}
	}
	return []string{path}
}
