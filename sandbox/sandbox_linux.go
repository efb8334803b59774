//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// landlockConfig is the newest Landlock ABI this package asks for; on an
// older kernel it is downgraded to what the kernel has (BestEffort), and
// Report says what that leaves out.
var landlockConfig = landlock.V7.BestEffort()

// deniedSyscalls fail with EPERM in a confined process: every way to a
// socket (Landlock covers only TCP below ABI 9/10), io_uring (which does
// I/O beside the system calls a filter sees), and what reaches other
// processes, the kernel's keyring or its mounts.
var deniedSyscalls = []string{
	"socket", "socketpair",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"ptrace", "process_vm_readv", "process_vm_writev",
	"bpf", "perf_event_open", "userfaultfd",
	"keyctl", "add_key", "request_key",
	"mount", "umount2", "open_tree", "move_mount", "fsopen", "pivot_root", "chroot",
	"unshare", "setns",
}

// Confine confines this process as r says (see the package doc) and
// reports what it enforced. An error means a restriction the kernel has
// could not be applied (a path in r that does not exist, a failed system
// call): the process must not go on to interpret untrusted content. A
// kernel without Landlock or seccomp is no error: Report.Missing says so.
func Confine(r Rules) (Report, error) {
	start := time.Now()
	rep := Report{Missing: map[Guarantee]string{}}
	if err := limits(r); err != nil {
		return rep, err
	}
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil {
		abi = 0
	}
	rep.LandlockABI = abi
	// A cgo build restricts threads through libpsx, for which go-landlock
	// needs this process's /proc/<pid>/task.
	psxUsable := !psxListsTasks || ownTasks()
	switch {
	case abi > 0 && psxUsable:
		if err := landlockConfig.Restrict(rules(r)...); err != nil {
			return rep, fmt.Errorf("confining the process with Landlock (ABI %d): %w", abi, err)
		}
	case abi == 0:
		// Landlock sets no_new_privs on every thread; seccomp's TSYNC
		// needs it where Landlock did not run.
		if err := llsys.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return rep, fmt.Errorf("setting no_new_privs: %w", err)
		}
	}
	for _, g := range []Guarantee{Files, TCP, IPC} {
		switch {
		case abi >= landlockABI[g] && psxUsable:
			rep.Enforced = append(rep.Enforced, g)
		case abi >= landlockABI[g]:
			rep.Missing[g] = "this cgo build restricts threads through libpsx, which needs /proc/<pid>/task, and /proc is another PID namespace's"
		default:
			rep.Missing[g] = fmt.Sprintf("needs Landlock ABI %d, the kernel has %d", landlockABI[g], abi)
		}
	}
	switch err := filterSyscalls(); {
	case err == nil:
		rep.Enforced = append(rep.Enforced, Sockets)
	case errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EINVAL):
		rep.Missing[Sockets] = "the kernel has no seccomp filter"
	case !psxUsable:
		// no_new_privs could not be set on every thread either (root's
		// CAP_SYS_ADMIN makes TSYNC work without it).
		rep.Missing[Sockets] = err.Error()
	default:
		return rep, err
	}
	if len(rep.Missing) == 0 {
		rep.Missing = nil
	}
	rep.Took = time.Since(start)
	return rep, nil
}

// limits sets RLIMIT_DATA and RLIMIT_CPU (soft = hard: at the CPU limit
// the kernel sends SIGKILL, which nothing can catch).
func limits(r Rules) error {
	if r.Memory > 0 {
		lim := &syscall.Rlimit{Cur: uint64(r.Memory), Max: uint64(r.Memory)}
		if err := syscall.Setrlimit(syscall.RLIMIT_DATA, lim); err != nil {
			return fmt.Errorf("capping the data segment at %d bytes: %w", r.Memory, err)
		}
	}
	if r.CPU > 0 {
		s := uint64((r.CPU + time.Second - 1) / time.Second)
		if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: s, Max: s}); err != nil {
			return fmt.Errorf("capping the CPU time at %d s: %w", s, err)
		}
	}
	return nil
}

// rules are r's paths as Landlock rules: a directory's whole tree, a
// file alone.
func rules(r Rules) []landlock.Rule {
	var out []landlock.Rule
	add := func(paths []string, dir, file func(...string) landlock.FSRule) {
		for _, p := range paths {
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				out = append(out, file(p))
				continue
			}
			out = append(out, dir(p)) // a missing path fails Restrict, naming it
		}
	}
	add(r.ReadOnly, landlock.RODirs, landlock.ROFiles)
	add(r.ReadWrite, landlock.RWDirs, landlock.RWFiles)
	return out
}

// filterSyscalls installs the seccomp filter on every thread (TSYNC).
func filterSyscalls() error {
	f := seccomp.Filter{
		Flag: seccomp.FilterFlagTSync,
		Policy: seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls:      []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: deniedSyscalls}},
		},
	}
	if err := seccomp.LoadFilter(f); err != nil {
		return fmt.Errorf("installing the seccomp filter: %w", err)
	}
	return nil
}

// ownTasks reports whether /proc is this process's PID namespace's, so
// that /proc/<pid>/task lists this process's threads. Checking that
// /proc/<getpid>/task/<getpid> exists is not enough: in a PID namespace
// that sees an outer /proc, that path is usually another process (PID 1
// is always there), and libpsx then waits forever for threads it cannot
// find (TestConfineInAnotherPIDNamespace). /proc/self resolves through
// the mount's namespace, so it names getpid only in the right one.
func ownTasks() bool {
	self, err := os.Readlink("/proc/self")
	return err == nil && self == strconv.Itoa(os.Getpid())
}
