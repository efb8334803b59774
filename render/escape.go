package render

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/throughline-dev/throughline/sandbox"
)

// EscapeAttempts is what ProbeSandbox has a render child try after it
// confined itself, with plain system calls (no library of the render in
// between): the proof that the sandbox, not a library's good manners,
// keeps a render inside the repository.
type EscapeAttempts struct {
	// Read lists files to read (outside the root, inside .git).
	Read []string `json:"read,omitempty"`
	// Write lists files to create (outside the child's TMPDIR).
	Write []string `json:"write,omitempty"`
	// Dial lists network addresses to connect to, as "network address"
	// ("tcp 127.0.0.1:80", "udp 10.0.0.1:53", "unix /run/x.sock").
	Dial []string `json:"dial,omitempty"`
}

// try runs every attempt and returns its outcome by "op target": "" when
// it succeeded, else the error.
func (a *EscapeAttempts) try() map[string]string {
	out := map[string]string{}
	note := func(key string, err error) {
		out[key] = ""
		if err != nil {
			out[key] = err.Error()
		}
	}
	for _, p := range a.Read {
		_, err := os.ReadFile(p)
		note("read "+p, err)
	}
	for _, p := range a.Write {
		note("write "+p, os.WriteFile(p, []byte("escaped"), 0o600))
	}
	for _, d := range a.Dial {
		var network, addr string
		if _, err := fmt.Sscan(d, &network, &addr); err != nil {
			note("dial "+d, err)
			continue
		}
		c, err := net.Dial(network, addr)
		if err == nil {
			if _, err = c.Write([]byte("escaped")); err == nil {
				_, err = c.Read(make([]byte, 1))
			}
			_ = c.Close()
		}
		note("dial "+d, err)
	}
	return out
}

// ProbeSandbox starts w's render child on root, has it confine itself as
// for a render and then try a's escapes; it returns the outcome of each
// ("op target" -> "" when it succeeded, else the error) and what the
// child's sandbox enforced. An operator runs it to see what the kernel of
// the sidecar gives; the tests run it to prove each rule from inside.
func ProbeSandbox(ctx context.Context, w *Worker, root string, a EscapeAttempts) (map[string]string, sandbox.Report, error) {
	if w == nil {
		w = &Worker{Args: []string{WorkerCommand}}
	}
	resp, err := runWorker(ctx, w, root, workerRequest{Root: root, Path: ".", MemoryLimit: w.MemoryLimit, Escape: &a})
	if err != nil {
		return nil, sandbox.Report{}, err
	}
	return resp.Escaped, resp.Sandbox, nil
}
