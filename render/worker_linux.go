package render

import (
	"os"
	"syscall"
)

// workerSysProcAttr puts the child in its own process group (killWorker
// kills the group) and has the kernel kill it when the parent dies.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killWorker kills the child's process group (SIGKILL).
func killWorker(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }

// peakFile is the child's /proc/self/status, opened before confinement.
type peakFile struct{ f *os.File }

func openPeakRSS() peakFile {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return peakFile{}
	}
	return peakFile{f}
}

// read is VmHWM, the peak resident set of this process's own address
// space, in bytes (0 when it cannot be read).
func (p peakFile) read() int64 {
	if p.f == nil {
		return 0
	}
	buf := make([]byte, 4096)
	n, _ := p.f.ReadAt(buf, 0)
	return parsePeakRSS(buf[:n])
}

func (p peakFile) close() {
	if p.f != nil {
		_ = p.f.Close()
	}
}
