package resident

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ProtocolVersion is the version of the request and response; a server
// answers a request of another version with an error, and the client then
// renders in-process.
const ProtocolVersion = 1

// Caps of the protocol, in bytes.
const (
	// MaxRequestBytes bounds a request (the environment and the path).
	MaxRequestBytes = 1 << 20
	// MaxHeaderBytes bounds a response's header (the stderr of a refusal
	// and the log fields).
	MaxHeaderBytes = 1 << 20
	// DefaultMaxManifestBytes bounds the manifests of a response when the
	// client sets no other cap: far above a 2,000-Deployment render (about
	// 6 MiB).
	DefaultMaxManifestBytes = 256 << 20
)

// readStep is how much of a frame is read (and allocated) at a time: a
// peer that announces a large frame and sends less costs at most what it
// sent plus one step.
const readStep = 64 << 10

// ErrFrameTooLarge is wrapped by the error of a frame whose announced
// length is above the reader's cap.
var ErrFrameTooLarge = errors.New("frame larger than its cap")

// Request is what the client hands over: the directory Argo CD unpacked
// and ran the plugin in, and the Application's environment.
type Request struct {
	Version int `json:"version"`
	// WorkDir is the absolute application path in the unpacked repository
	// (the plugin's working directory).
	WorkDir string `json:"workDir"`
	// Environ holds the KEY=VALUE pairs of the plugin's environment that a
	// render reads (ForwardedEnviron).
	Environ []string `json:"environ"`
	// MaxFileSize is the client's --max-file-size; the server renders with
	// the smaller of it and its own.
	MaxFileSize int64 `json:"maxFileSize,omitempty"`
	// NoCache is the client's --no-cache.
	NoCache bool `json:"noCache,omitempty"`
}

// Response is the server's answer. Code is the exit code the plugin exits
// with (package exitcode); when it is not 0, Stderr is what the plugin
// prints and there are no manifests.
type Response struct {
	Version int    `json:"version"`
	Code    int    `json:"code"`
	Stderr  string `json:"stderr,omitempty"`
	// What the plugin logs about the render.
	App          string `json:"app,omitempty"`
	RenderedHash string `json:"renderedHash,omitempty"`
	Objects      int    `json:"objects,omitempty"`
	CacheHit     bool   `json:"cacheHit,omitempty"`
	// Warnings are what the plugin logs as "render cache not updated",
	// one line each.
	Warnings []string `json:"warnings,omitempty"`
	// Exceptions are the allow-list exceptions the render used (JSON of
	// the Acceptance's spec.exceptions), logged by the plugin.
	Exceptions json.RawMessage `json:"exceptions,omitempty"`
	// Manifests is sent as its own raw frame after the header.
	Manifests []byte `json:"-"`
	// BudgetKill says which budget of the render child ended the render
	// ("time" or "memory"), for the server's metrics; it is not sent.
	BudgetKill string `json:"-"`
}

// forwarded are the prefixes and names of the plugin environment a render
// reads (cmp.EnvFromEnviron): nothing else of the client's environment is
// sent.
var forwarded = []string{"ARGOCD_APP_", "ARGOCD_ENV_", "PARAM_", "KUBE_VERSION=", "KUBE_API_VERSIONS="}

// ForwardedEnviron keeps the pairs of environ that a render reads: the
// Argo CD build environment (ARGOCD_APP_*, KUBE_VERSION,
// KUBE_API_VERSIONS), the plugin env (ARGOCD_ENV_*) and the parameters
// (PARAM_*).
func ForwardedEnviron(environ []string) []string {
	var out []string
	for _, kv := range environ {
		for _, p := range forwarded {
			if strings.HasPrefix(kv, p) {
				out = append(out, kv)
				break
			}
		}
	}
	return out
}

// writeFrame writes one frame: the length, then body.
func writeFrame(w io.Writer, body []byte) error {
	if uint64(len(body)) > 1<<32-1 {
		return fmt.Errorf("writing frame of %d bytes: %w", len(body), ErrFrameTooLarge)
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(body)))
	if _, err := w.Write(n[:]); err != nil {
		return fmt.Errorf("writing frame length: %w", err)
	}
	if _, err := w.Write(body); err != nil {
		return fmt.Errorf("writing frame of %d bytes: %w", len(body), err)
	}
	return nil
}

// readFrame reads one frame of at most limit bytes. The announced length
// is checked against limit before anything is allocated, and the body is
// read readStep at a time.
func readFrame(r io.Reader, limit int64, what string) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, fmt.Errorf("reading %s length: %w", what, err)
	}
	size := int64(binary.BigEndian.Uint32(n[:]))
	if size > limit {
		return nil, fmt.Errorf("%s of %d bytes, cap %d: %w", what, size, limit, ErrFrameTooLarge)
	}
	var b bytes.Buffer
	b.Grow(int(min(size, readStep)))
	if _, err := io.CopyN(&b, r, size); err != nil {
		return nil, fmt.Errorf("reading %s of %d bytes (got %d): %w", what, size, b.Len(), err)
	}
	return b.Bytes(), nil
}

// readJSON reads one frame of at most limit bytes into v.
func readJSON(r io.Reader, limit int64, what string, v any) error {
	body, err := readFrame(r, limit, what)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("decoding %s: %w", what, err)
	}
	return nil
}

// writeJSON writes v as one frame of at most limit bytes.
func writeJSON(w io.Writer, limit int64, what string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", what, err)
	}
	if int64(len(body)) > limit {
		return fmt.Errorf("%s of %d bytes, cap %d: %w", what, len(body), limit, ErrFrameTooLarge)
	}
	return writeFrame(w, body)
}
