package render

import (
	"errors"
	"net/http"
	"net/url"
	"runtime"
	"strings"
)

// ErrNetworkRefused is returned to kustomize when it tries an HTTP request:
// the renderer never fetches.
var ErrNetworkRefused = errors.New("throughline refuses every network request kustomize makes: the render reads only the repository")

// kustomizeFrame is the package prefix of kustomize's code.
const kustomizeFrame = "sigs.k8s.io/kustomize/"

// init guards http.DefaultTransport, the transport of the zero http.Client
// kustomize's loader fetches remote files with (FileLoader.httpClientGetContent).
//
// The guard sits in the transport's Proxy hook, which net/http calls on the
// requesting goroutine for every new request before any connection is
// looked up or dialled; it refuses a request whose call stack passes through
// kustomize's code and hands every other request to the original hook. So it
// refuses kustomize's fetches whenever they happen, in every process that
// links the renderer, and leaves every other HTTP client of the process
// alone, also while a render runs concurrently (a guard keyed on "a render
// is running", krustyMu, would refuse a concurrent forge or registry call
// through the same transport). The transport keeps its type, so code that
// asserts http.DefaultTransport.(*http.Transport) still works; it is set in
// init, before any goroutine of the program can use the transport.
func init() { guardTransport(http.DefaultTransport) }

// guardTransport installs the kustomize guard in rt's Proxy hook when rt is
// an *http.Transport.
func guardTransport(rt http.RoundTripper) {
	t, ok := rt.(*http.Transport)
	if !ok {
		return
	}
	next := t.Proxy
	t.Proxy = func(r *http.Request) (*url.URL, error) {
		if calledFromKustomize() {
			return nil, ErrNetworkRefused
		}
		if next == nil {
			return nil, nil
		}
		return next(r)
	}
}

// calledFromKustomize reports whether kustomize's code is on the calling
// goroutine's stack.
func calledFromKustomize() bool {
	pcs := make([]uintptr, 128)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, kustomizeFrame) {
			return true
		}
		if !more {
			return false
		}
	}
}
