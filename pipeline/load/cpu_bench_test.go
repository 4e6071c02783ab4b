package load_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
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
		nats: procCPU(tb, s.natsPID),
		ch:   procCPU(tb, s.chPID),
	}
}

func (a cpuSplit) since(b cpuSplit) cpuSplit {
	return cpuSplit{self: a.self - b.self, nats: a.nats - b.nats, ch: a.ch - b.ch}
}

// procCPU is a process's user and system time (fields 14 and 15 of
// /proc/PID/stat, in clock ticks of 10 ms).
func procCPU(tb testing.TB, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatalf("cpu of process %d: %v", pid, err)
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	_, rest, _ := strings.Cut(string(data), ") ")
	f := strings.Fields(rest)
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// pidWithArg finds the process whose command line holds arg, such as a
// clickhouse-server's own directory.
func pidWithArg(tb testing.TB, arg string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), arg) && strings.Contains(string(cmdline), "clickhouse") {
			return pid
		}
	}
	tb.Fatalf("no clickhouse process with %q in its command line", arg)
	return 0
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
