package load_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/pagewatch/pagewatch/internal/procstat"
)

// cpuSplit is the CPU time used so far by this process (the loaders), the
// NATS server the benchmark runs as a child process, and clickhouse-server.
type cpuSplit struct{ self, nats, ch time.Duration }

// cpuSampler reads cpuSplit: this process from getrusage, the others from
// /proc/PID/stat.
type cpuSampler struct{ natsPID, chPID int }

func (s cpuSampler) sample(tb testing.TB) cpuSplit {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return cpuSplit{
		self: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		nats: procstat.CPU(tb, s.natsPID),
		ch:   procstat.CPU(tb, s.chPID),
	}
}

func (a cpuSplit) since(b cpuSplit) cpuSplit {
	return cpuSplit{self: a.self - b.self, nats: a.nats - b.nats, ch: a.ch - b.ch}
}

// envNATSChild makes the test binary a NATS server storing in its value's
// directory (see TestMain): the benchmark's loaders then count alone in
// this process's CPU time.
const envNATSChild = "PAGEWATCH_BENCH_NATS_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(envNATSChild); dir != "" {
		os.Exit(runNATSChild(dir))
	}
	os.Exit(m.Run())
}

// runNATSChild serves JetStream until its stdin closes, having printed
// its client URL on stdout.
func runNATSChild(dir string) int {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		fmt.Fprintln(os.Stderr, "nats child: not ready within 10s")
		return 1
	}
	fmt.Println(srv.ClientURL())
	_, _ = bufio.NewReader(os.Stdin).ReadString(0)
	srv.Shutdown()
	srv.WaitForShutdown()
	return 0
}

// startNATSChild runs this test binary as a NATS server until the
// benchmark ends and returns its URL and pid.
func startNATSChild(tb testing.TB) (url string, pid int) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envNATSChild+"="+tb.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("nats child: %v", err)
	}
	return strings.TrimSpace(line), cmd.Process.Pid
}
