package load_test

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuSplit reports CPU time used by this process (the loaders and the
// embedded NATS server) and by everything else on the machine (mostly
// clickhouse-server) between two calls.
type cpuSplit struct{ self, all time.Duration }

func sampleCPU() cpuSplit {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	self := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	data, _ := os.ReadFile("/proc/stat")
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	var ticks int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		ticks += n
	}
	return cpuSplit{self: self, all: time.Duration(ticks) * 10 * time.Millisecond}
}

func (a cpuSplit) since(b cpuSplit) (self, others time.Duration) {
	return a.self - b.self, (a.all - b.all) - (a.self - b.self)
}
