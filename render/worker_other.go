//go:build !linux

package render

import (
	"os"
	"syscall"
)

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

// peakFile reports nothing here.
type peakFile struct{}

func openPeakRSS() peakFile { return peakFile{} }

func (peakFile) read() int64 { return 0 }

func (peakFile) close() {}
