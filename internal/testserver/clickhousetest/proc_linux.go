package clickhousetest

import "syscall"

// sysProcAttr puts the server in its own process group, so signals aimed at
// the test's group (e.g. ^C) do not race our own shutdown, and asks the kernel
// to SIGKILL it when the test process dies, so a killed or timed-out test does
// not leave servers behind.
//
// Pdeathsig fires when the OS thread that forked the child exits, not the
// process. Go only ends threads whose goroutine exits while locked with
// runtime.LockOSThread, which tests calling Start do not do.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func killGroup(pid int) error {
	return syscall.Kill(-pid, syscall.SIGKILL)
}
