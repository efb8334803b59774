package render

import (
	"syscall"
)

// workerSysProcAttr puts the child in its own process group (killWorker
// kills the group) and has the kernel kill it when the parent dies.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killWorker kills the child's process group (SIGKILL).
func killWorker(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }
