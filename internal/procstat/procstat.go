// Package procstat reads a process's CPU time and memory from /proc, for
// the benchmarks that report CPU-seconds per unit of work: unlike rates,
// those stay stable on a shared machine.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// clockTick is the unit of /proc/PID/stat's times: USER_HZ, 100 on
// every Linux architecture Go builds for.
const clockTick = 10 * time.Millisecond

// CPU is the user and system time process pid has used: fields 14 and 15
// of /proc/PID/stat.
func CPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatalf("procstat: cpu of process %d: %v", pid, err)
	}
	// The command name, field 2, is in parentheses and may hold spaces
	// and parentheses: the fields that count come after the last ')'.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(f) < 13 {
		tb.Fatalf("procstat: /proc/%d/stat has %d fields after the name", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		tb.Fatalf("procstat: /proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * clockTick
}

// SelfCPU is the user and system time this process has used.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// StatusBytes is a "kB" field of /proc/PID/status, such as VmHWM (the
// peak resident set), in bytes.
func StatusBytes(tb testing.TB, pid int, field string) int64 {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatalf("procstat: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				tb.Fatalf("procstat: /proc/%d/status: %q", pid, line)
			}
			return kb << 10
		}
	}
	tb.Fatalf("procstat: /proc/%d/status has no %s", pid, field)
	return 0
}

// Find is the process whose command line names word and either runs
// from dir or names it too (a server started with its directory in its
// arguments, or a JVM started in it).
func Find(tb testing.TB, dir, word string) int {
	tb.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		cwd, _ := os.Readlink("/proc/" + e.Name() + "/cwd")
		if (cwd == dir || strings.Contains(string(cmdline), dir)) && strings.Contains(string(cmdline), word) {
			return pid
		}
	}
	tb.Fatalf("procstat: no %s process running from %s", word, dir)
	return 0
}
