package render

import (
	"syscall"
)

// limitMemory caps the process's data segment (RLIMIT_DATA: every private
// writable mapping, the Go heap included) at limit bytes. Go's runtime
// reserves address space without writing it, which RLIMIT_DATA does not
// count (RLIMIT_AS would, and fails the runtime long before the heap is
// large); past the cap an allocation ends the process with "fatal error:
// runtime: out of memory", which the parent reports as ErrMemoryBudget.
func limitMemory(limit int64) error {
	return syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: uint64(limit), Max: uint64(limit)})
}

// workerSysProcAttr puts the child in its own process group (killWorker
// kills the group) and has the kernel kill it when the parent dies.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killWorker kills the child's process group (SIGKILL).
func killWorker(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }
