package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestMemoryBudgetIsTheChildsDecision: a child past its budget is ended by
// its own watch (exit workerMemoryExit), not by the kernel's refusal. With
// RLIMIT_DATA alone, the Go runtime died with "cannot allocate memory",
// "out of memory" or, one run in eight, a SIGSEGV in its garbage collector,
// which the parent reported as an internal error (a CI run of the Argo CD
// compat suite failed so). The attack is a 60 MiB index.yaml, parsed three
// times: every run must end at the watch.
func TestMemoryBudgetIsTheChildsDecision(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("apiVersion: v1\nentries:\n  web:\n")
	for i := 0; b.Len() < 60<<20; i++ {
		fmt.Fprintf(&b, "  - name: web\n    version: 0.%d.%d\n    urls: [charts/web.tgz]\n    digest: %064x\n", i/1000, i%1000, i)
	}
	file := filepath.Join(t.TempDir(), "index.yaml")
	if err := os.WriteFile(file, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	req, err := json.Marshal(workerRequest{CPU: time.Minute, Index: &indexLookup{File: file, Name: "web", Version: "1.2.3"}})
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for run := range 3 {
		env, err := workerEnv(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(self, WorkerCommand)
		var stderr bytes.Buffer
		cmd.Env, cmd.Stdin, cmd.Stderr = env, bytes.NewReader(req), &stderr
		err = cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != workerMemoryExit {
			first, _, _ := bytes.Cut(stderr.Bytes(), []byte("\n"))
			t.Fatalf("run %d: the child exited %d (%v: %s), want %d: the budget was decided by the kernel, not the watch",
				run, code, err, first, workerMemoryExit)
		}
	}
}
