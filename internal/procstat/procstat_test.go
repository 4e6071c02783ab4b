package procstat_test

import (
	"os/exec"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/procstat"
)

// A child that spins for a while has used about that much CPU; its
// peak memory is there; it is found by its command line and directory.
func TestCPUAndMemoryOfAChild(t *testing.T) {
	dir := t.TempDir()
	began := time.Now()
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exec sleep 30")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	time.Sleep(1500 * time.Millisecond)
	if pid := procstat.Find(t, dir, "sleep"); pid != cmd.Process.Pid {
		t.Errorf("Find = %d, want %d", pid, cmd.Process.Pid)
	}
	// exec keeps the pid: the spin's CPU stays counted to it.
	if cpu, wall := procstat.CPU(t, cmd.Process.Pid), time.Since(began); cpu <= 0 || cpu > wall {
		t.Errorf("CPU of a shell that spun, then slept = %s in %s", cpu, wall)
	}
	if hwm := procstat.StatusBytes(t, cmd.Process.Pid, "VmHWM"); hwm <= 0 {
		t.Errorf("VmHWM = %d", hwm)
	}
	if self := procstat.SelfCPU(); self <= 0 {
		t.Errorf("SelfCPU = %s", self)
	}
}
