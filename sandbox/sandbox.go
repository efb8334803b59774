package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Rules is what a confined process may still do.
type Rules struct {
	// ReadOnly lists files and directories the process may read
	// (directories: their whole tree). Each must exist.
	ReadOnly []string
	// ReadWrite lists directories the process may read, create, write and
	// remove files in. Each must exist.
	ReadWrite []string
	// Memory caps the process's data segment (RLIMIT_DATA: the Go heap and
	// every other private writable mapping) in bytes; 0 sets no cap.
	Memory int64
	// CPU caps the process's CPU time (RLIMIT_CPU, whole seconds, rounded
	// up); the kernel kills the process (SIGKILL) when it gets there. 0
	// sets no cap.
	CPU time.Duration
}

// Guarantee names one kind of confinement.
type Guarantee string

// The guarantees Confine gives where the kernel has what they need.
const (
	// Files: reads only below Rules.ReadOnly and Rules.ReadWrite, writes
	// only below Rules.ReadWrite (Landlock ABI 1).
	Files Guarantee = "files"
	// TCP: no TCP connect or bind (Landlock ABI 4).
	TCP Guarantee = "tcp"
	// IPC: no signal to, and no abstract UNIX socket of, a process outside
	// the sandbox (Landlock ABI 6).
	IPC Guarantee = "ipc"
	// Sockets: no socket of any family and no io_uring (seccomp).
	Sockets Guarantee = "sockets"
)

// all is every guarantee, in the order a report lists them.
var all = []Guarantee{Files, TCP, IPC, Sockets}

// landlockABI is the Landlock ABI each Landlock guarantee needs.
var landlockABI = map[Guarantee]int{Files: 1, TCP: 4, IPC: 6}

// Report says what Confine enforced.
type Report struct {
	// LandlockABI is the kernel's Landlock ABI version (0: none, or
	// Landlock is disabled).
	LandlockABI int `json:"landlockABI"`
	// Enforced lists the guarantees in force.
	Enforced []Guarantee `json:"enforced"`
	// Missing says, per guarantee not in force, why.
	Missing map[Guarantee]string `json:"missing,omitempty"`
	// Took is how long Confine took (the sandbox's cost to a render).
	Took time.Duration `json:"took"`
}

// Has reports whether g is in force.
func (r Report) Has(g Guarantee) bool { return slices.Contains(r.Enforced, g) }

// String is one line: the guarantees in force and, for each missing one,
// why.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Landlock ABI %d; enforced: %s", r.LandlockABI, strings.Join(guaranteeNames(r.Enforced), ", "))
	for _, g := range all {
		if why, ok := r.Missing[g]; ok {
			fmt.Fprintf(&b, "; not enforced: %s (%s)", g, why)
		}
	}
	return b.String()
}

func guaranteeNames(gs []Guarantee) []string {
	if len(gs) == 0 {
		return []string{"none"}
	}
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = string(g)
	}
	return out
}

// TreeExcept lists what ReadOnly should hold to make the tree below root
// readable except the entries of root named in exclude (".git"): root's
// directories and regular files, each by its absolute path. A symbolic link
// at root's top level is left out (a rule on it would grant its target,
// wherever it points; what it points to inside the tree stays readable
// through the target's own entry), and so is any other kind of file (a
// FIFO, a socket, a device).
//
// Landlock grants by allowing, so leaving an entry out is the only way to
// deny it; entries created in root after the call are not readable.
func TreeExcept(root string, exclude ...string) ([]string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("resolving the sandbox root %s: %w", root, err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("listing the sandbox root %s: %w", root, err)
	}
	var out []string
	for _, e := range entries {
		if slices.Contains(exclude, e.Name()) {
			continue
		}
		if t := e.Type(); t.IsDir() || t.IsRegular() {
			out = append(out, filepath.Join(abs, e.Name()))
		}
	}
	return out, nil
}
