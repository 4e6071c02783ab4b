//go:build unix && !linux

package clickhousetest

import "syscall"

// sysProcAttr puts the server in its own process group. There is no
// parent-death signal outside Linux, so a killed test can leave a server
// running; its data lives in the test's temp dir.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

func killGroup(pid int) error {
	return syscall.Kill(-pid, syscall.SIGKILL)
}
