//go:build !linux

package render

import (
	"os"
	"syscall"
)

// limitMemory is a no-op where RLIMIT_DATA is not enforced the same way.
func limitMemory(int64) error { return nil }

// workerSysProcAttr is the default elsewhere.
func workerSysProcAttr() *syscall.SysProcAttr { return nil }

// killWorker kills the child.
func killWorker(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
