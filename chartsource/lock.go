package chartsource

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path"
	"strings"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
)

// Lock file identity.
const (
	// LockFile is the name of the lock file, beside the kustomization or
	// Chart.yaml whose remote charts it pins.
	LockFile       = "throughline-charts.lock.yaml"
	LockAPIVersion = "throughline.dev/v1alpha1"
	LockKind       = "ChartLock"
	// maxLockSize caps a lock file.
	maxLockSize = 1 << 20
	// maxLockEntries caps the entries of one lock file.
	maxLockEntries = 1000
)

// Lock is a parsed lock file: one entry per pinned chart version.
type Lock struct {
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Charts     []Entry `json:"charts"`
	// File is the lock file, relative to the repository root (not in the
	// file).
	File string `json:"-"`
}

// Entry pins one chart version: Digest is the OCI manifest digest (oci://)
// or the sha256 of the .tgz (https://), sha256:<64 lowercase hex>.
type Entry struct {
	Repo    string `json:"repo"`
	Name    string `json:"name"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
}

// Ref is the entry's chart version.
func (e Entry) Ref() Ref { return Ref{Repo: e.Repo, Name: e.Name, Version: e.Version} }

// ValidDigest reports whether d is sha256:<64 lowercase hex>.
func ValidDigest(d string) bool {
	alg, h, ok := strings.Cut(d, ":")
	return ok && alg == "sha256" && len(h) == 64 && strings.Trim(h, "0123456789abcdef") == ""
}

// ParseLock reads a lock file strictly: unknown fields, duplicate keys, a
// second document, a missing field, a range instead of a version, a tag or
// a malformed digest, two entries for one chart version are each an
// *exitcode.InvalidInput naming file and field (exit 4). A range is bad
// input here, not a policy refusal: the lock file records what pin resolved,
// and pin only ever writes exact versions, so a range in it is a hand edit
// that cannot be what was verified.
func ParseLock(file string, data []byte) (*Lock, error) {
	bad := func(format string, args ...any) error {
		return &exitcode.InvalidInput{File: file, Err: fmt.Errorf(format, args...)}
	}
	if len(data) > maxLockSize {
		return nil, bad("%d bytes exceeds the %d byte limit of a lock file", len(data), maxLockSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, bad("is empty: want apiVersion %s, kind %s, charts", LockAPIVersion, LockKind)
	}
	if err := singleDocument(data); err != nil {
		return nil, bad("%w", err)
	}
	js, err := sigyaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, bad("not YAML: %w", err)
	}
	l := &Lock{File: file}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(l); err != nil {
		return nil, bad("decoding: %w", err)
	}
	if dec.More() {
		return nil, bad("more than one value")
	}
	if l.APIVersion != LockAPIVersion || l.Kind != LockKind {
		return nil, bad("apiVersion/kind %q/%q: want %s/%s", l.APIVersion, l.Kind, LockAPIVersion, LockKind)
	}
	if len(l.Charts) > maxLockEntries {
		return nil, bad("charts: %d entries, at most %d", len(l.Charts), maxLockEntries)
	}
	seen := map[Ref]int{}
	for i, e := range l.Charts {
		if err := e.validate(); err != nil {
			return nil, bad("charts[%d]: %w", i, err)
		}
		if j, dup := seen[e.Ref()]; dup {
			return nil, bad("charts[%d]: %s is pinned twice (charts[%d])", i, e.Ref(), j)
		}
		seen[e.Ref()] = i
	}
	return l, nil
}

// singleDocument refuses a stream of more than one YAML document.
func singleDocument(data []byte) error {
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimRight(line, " \t\r")
		if i > 0 && (t == "---" || strings.HasPrefix(t, "--- ")) || t == "..." {
			return fmt.Errorf("line %d: a lock file is one YAML document", i+1)
		}
	}
	return nil
}

// validate checks one entry, naming the field at fault.
func (e Entry) validate() error {
	if e.Repo == "" || e.Name == "" || e.Version == "" || e.Digest == "" {
		var missing []string
		for _, f := range []struct{ k, v string }{{"repo", e.Repo}, {"name", e.Name}, {"version", e.Version}, {"digest", e.Digest}} {
			if f.v == "" {
				missing = append(missing, f.k)
			}
		}
		return fmt.Errorf("field %s: missing", strings.Join(missing, ", "))
	}
	if err := validRepo(e.Repo); err != nil {
		return fmt.Errorf("field repo: %w", err)
	}
	if !chartName.MatchString(e.Name) {
		return fmt.Errorf("field name: %q is not a chart name", e.Name)
	}
	if err := ExactVersion(e.Version); err != nil {
		return fmt.Errorf("field version: %w", err)
	}
	if !ValidDigest(e.Digest) {
		return fmt.Errorf("field digest: %q: want sha256:<64 lowercase hex> (a digest, never a tag)", e.Digest)
	}
	return nil
}

// Find returns the entry pinning ref (repository compared without a
// trailing slash).
func (l *Lock) Find(ref Ref) (Entry, bool) {
	for _, e := range l.Charts {
		if sameRepo(e.Repo, ref.Repo) && e.Name == ref.Name && e.Version == ref.Version {
			return e, true
		}
	}
	return Entry{}, false
}

// other returns the versions the lock pins for ref's chart (for the message
// of a stale lock).
func (l *Lock) other(ref Ref) []string {
	var vs []string
	for _, e := range l.Charts {
		if sameRepo(e.Repo, ref.Repo) && e.Name == ref.Name {
			vs = append(vs, e.Version)
		}
	}
	return vs
}

func sameRepo(a, b string) bool { return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/") }

// FileReader reads a file by its path relative to the repository root,
// refusing what leaves the root: *render.ConfinedFS is one.
type FileReader interface {
	ReadFile(path string) ([]byte, error)
}

// LockPath is the lock file of directory dir (relative to the root).
func LockPath(dir string) string { return path.Join(path.Clean(dir), LockFile) }

// ReadLock reads the lock file of dir through fsys. A missing lock file is
// an empty lock (every remote chart is then unpinned); a lock file that is
// a symlink out of the root, not a regular file or too large is refused by
// fsys (exit 4).
func ReadLock(fsys FileReader, dir string) (*Lock, error) {
	file := LockPath(dir)
	data, err := fsys.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return &Lock{APIVersion: LockAPIVersion, Kind: LockKind, File: file}, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseLock(file, data)
}

// isLoopback reports whether host[:port] is localhost, 127.0.0.0/8 or ::1.
// (registry.IsLoopback says the same; this package does not import registry
// so that the plugin's render path links no Kubernetes API types.)
func isLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
