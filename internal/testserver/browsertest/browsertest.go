// Package browsertest runs a real browser for tests: Debian's Chromium,
// driven by the npm package playwright-core through one long-lived Node
// process. The Go test drives each step (go to, fill, click, read text or
// an attribute, count, screenshot) and asserts in Go; the Node side only
// runs the steps and reports what the page did.
//
// Whatever a page logs as an error or warning, every uncaught exception,
// every Content-Security-Policy violation and every dialog (alert, confirm)
// fails the test, unless the test allowed it beforehand with AllowError:
// a page that breaks its own CSP or lets a stranger's text run script has
// a bug even when the step that triggered it passed.
//
// Nothing is downloaded: the machines running the tests have no network,
// so the browser is the installed one (PAGEWATCH_CHROMIUM, default
// /usr/bin/chromium) and playwright-core is the copy .ci/install-test-deps
// puts in .cache/playwright/node_modules (PAGEWATCH_PLAYWRIGHT_MODULES). A
// missing one fails the test under CI and skips it elsewhere, saying how
// to install it.
package browsertest

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/modroot"
	"github.com/pagewatch/pagewatch/internal/testcheck"
)

// The environment variables that override where the browser and
// playwright-core are found.
const (
	ChromiumEnv = "PAGEWATCH_CHROMIUM"
	ModulesEnv  = "PAGEWATCH_PLAYWRIGHT_MODULES"
)

// Flags are Chromium's command-line flags: headless, and nothing that
// needs a sandbox (the tests run as root in containers), a GPU or the
// network (no update checks, no sync, no first-run fetches).
var Flags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
}

// DefaultTimeout bounds each step in the browser (waiting for an element,
// a navigation); a step given its own timeout waits that long instead.
const DefaultTimeout = 10 * time.Second

// launchTimeout bounds starting Node and Chromium: a few seconds on a busy
// 2-core machine.
const launchTimeout = 90 * time.Second

//go:embed driver.js
var driverJS []byte

// Browser is one Chromium process with its Node driver. Its methods must be
// called from the test's goroutine; it is closed when the test ends.
type Browser struct {
	t       testing.TB
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	answers chan answer
	stderr  *lockedBuffer
	version string

	mu     sync.Mutex // guards nextID and pages
	nextID int
	pages  int
	dead   error // set once the driver has gone away
}

// answer is one line the driver writes.
type answer struct {
	ID     int             `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
	Events []Event         `json:"events"`
}

// Event is something a page did that a test may care about.
type Event struct {
	// Kind is console.error, console.warning, pageerror, csp, dialog or crash.
	Kind string `json:"kind"`
	Text string `json:"text"`
	// URL is the page's address when the event was seen.
	URL string `json:"url"`
	// Source is where a console message came from (file:line), if known.
	Source string `json:"source"`
}

func (e Event) String() string {
	s := e.Kind + ": " + e.Text
	if e.Source != "" {
		s += " (" + e.Source + ")"
	}
	if e.URL != "" {
		s += " on " + e.URL
	}
	return s
}

// Tools returns the browser's path and the node_modules directory holding
// playwright-core, or an error saying which is missing.
func Tools() (node, chromium, modules string, err error) {
	node, err = exec.LookPath("node")
	if err != nil {
		return "", "", "", fmt.Errorf("node not found: %w", err)
	}
	chromium = os.Getenv(ChromiumEnv)
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if chromium, err = exec.LookPath(chromium); err != nil {
		return "", "", "", fmt.Errorf("chromium not found (%s): %w", ChromiumEnv, err)
	}
	modules = os.Getenv(ModulesEnv)
	if modules == "" {
		root, err := modroot.Dir()
		if err != nil {
			return "", "", "", err
		}
		modules = filepath.Join(root, ".cache", "playwright", "node_modules")
	}
	// NODE_PATH entries resolve against node's working directory, the
	// test's package directory: make it absolute.
	if modules, err = filepath.Abs(modules); err != nil {
		return "", "", "", fmt.Errorf("resolve %s: %w", ModulesEnv, err)
	}
	if _, err := os.Stat(filepath.Join(modules, "playwright-core", "package.json")); err != nil {
		return "", "", "", fmt.Errorf("playwright-core not installed in %s (%s): %w", modules, ModulesEnv, err)
	}
	return node, chromium, modules, nil
}

// Start launches Chromium and its driver, or skips the test (fails it
// under CI) when node, Chromium or playwright-core is missing. The browser
// is closed when the test ends.
func Start(t testing.TB) *Browser {
	t.Helper()
	node, chromium, modules, err := Tools()
	if err != nil {
		testcheck.SkipOutsideCI(t, fmt.Sprintf("browsertest: %v; install them with `bash .ci/install-test-deps chromium playwright` (as root on Debian: apt-get install chromium nodejs npm; npm install --prefix .cache/playwright playwright-core)", err))
		return nil
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "driver.js")
	if err := os.WriteFile(script, driverJS, 0o644); err != nil {
		t.Fatalf("browsertest: write driver: %v", err)
	}
	flags, err := json.Marshal(Flags)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script, chromium, string(flags))
	cmd.Dir = dir
	// HOME in the temp dir: the Debian launcher and Chromium write caches
	// and crash reports under it.
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	b := &Browser{t: t, cmd: cmd, stdin: stdin, answers: make(chan answer, 1), stderr: &lockedBuffer{}}
	cmd.Stderr = b.stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("browsertest: start node: %v", err)
	}
	go b.read(stdout)
	t.Cleanup(b.close)

	first, err := b.wait(0, launchTimeout)
	if err != nil {
		t.Fatalf("browsertest: launching %s: %v", chromium, err)
	}
	_ = json.Unmarshal(first.Result, &b.version)
	t.Logf("browsertest: Chromium %s (%s) up in %v", b.version, chromium, time.Since(start).Round(time.Millisecond))
	return b
}

// Version is the browser's version, e.g. "156.0.8078.79".
func (b *Browser) Version() string { return b.version }

func (b *Browser) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64*1024), 64<<20) // a page's HTML can be long
	for sc.Scan() {
		var a answer
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			a = answer{ID: -1, Error: fmt.Sprintf("unreadable line from the driver: %v: %q", err, sc.Bytes())}
		}
		b.answers <- a
	}
	close(b.answers)
}

// wait returns the answer to command id, or an error when the driver
// exits or within passes first (the driver is then killed: a browser
// stuck mid-step answers nothing more).
func (b *Browser) wait(id int, within time.Duration) (answer, error) {
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		select {
		case a, ok := <-b.answers:
			if !ok {
				err := fmt.Errorf("the driver exited: %v\n%s", b.cmd.Wait(), b.stderr.String()) //nolint:errorlint // Wait is nil for an exit 0, which %w prints as %!w(<nil>)
				b.dead = err
				return answer{}, err
			}
			if a.ID == id {
				return a, nil
			}
			if a.ID == -1 {
				return answer{}, errors.New(a.Error)
			}
		case <-timer.C:
			b.kill()
			err := fmt.Errorf("no answer within %v; driver output:\n%s", within, b.stderr.String())
			b.dead = err
			return answer{}, err
		}
	}
}

// do runs one command for page and returns its answer.
func (b *Browser) do(page, op string, args map[string]any, within time.Duration) (answer, error) {
	if b.dead != nil {
		return answer{}, fmt.Errorf("the browser is gone: %w", b.dead)
	}
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	b.mu.Unlock()
	line, err := json.Marshal(map[string]any{"id": id, "op": op, "page": page, "args": args})
	if err != nil {
		return answer{}, err
	}
	if _, err := b.stdin.Write(append(line, '\n')); err != nil {
		return answer{}, fmt.Errorf("write to the driver: %w", err)
	}
	return b.wait(id, within)
}

func (b *Browser) kill() {
	if b.cmd.Process != nil {
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL) // node and its Chromium
	}
}

// close ends the driver, which closes the browser; a driver that does not
// exit in time is killed with its browser.
func (b *Browser) close() {
	_ = b.stdin.Close()
	done := make(chan struct{})
	go func() {
		for range b.answers { // drain, so read can end
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		b.kill()
		<-done
	}
	_ = b.cmd.Wait()
	b.kill() // any Chromium child left behind
}

// lockedBuffer collects the driver's stderr while it runs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
