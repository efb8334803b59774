package cmp_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/golden"
)

// recorder remembers every connection and request a server received.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, fmt.Sprintf(format, args...))
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.seen
	r.seen = nil
	return out
}

// recordingListener records every accepted connection, so a TLS handshake
// or a git client that never gets as far as an HTTP request is seen too.
type recordingListener struct {
	net.Listener
	rec  *recorder
	name string
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.rec.add("%s: connection from %s", l.name, c.RemoteAddr())
	}
	return c, err
}

// startRecorded serves h on 127.0.0.1 (a free port) and records every
// connection and request; it returns host:port.
func startRecorded(t *testing.T, rec *recorder, name string, h http.Handler) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.add("%s: %s %s", name, r.Method, r.URL)
		h.ServeHTTP(w, r)
	}))
	srv.Listener = &recordingListener{Listener: srv.Listener, rec: rec, name: name}
	srv.Start()
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// startGitServer serves a bare repository org/repo.git holding a valid
// kustomization over git's smart HTTP (git http-backend behind net/http/cgi,
// the pattern of internal/testenv).
func startGitServer(t *testing.T, rec *recorder) string {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not on PATH")
	}
	execPath, err := exec.Command(gitBin, "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("git-http-backend: %v", err)
	}
	projects, home := t.TempDir(), t.TempDir()
	work, _ := gittest.New(t, map[string]string{
		"kustomization.yaml": "resources: [cm.yaml]\n",
		"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cloned-from-the-network}\n",
	})
	gittest.Run(t, work, "tag", "v1")
	gittest.Run(t, projects, "clone", "-q", "--bare", work, filepath.Join(projects, "org", "repo.git"))
	// git http-backend's own environment: not a fixture, no author needed.
	gitEnv := []string{"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0"}
	h := &cgi.Handler{Path: backend, Env: append([]string{"GIT_PROJECT_ROOT=" + projects, "GIT_HTTP_EXPORT_ALL=1"}, gitEnv...)}
	return startRecorded(t, rec, "git", h)
}

// hostileEnv points every way git or kustomize could reach the network at
// the recorders: ssh through a script that logs its arguments, github.com
// through the git server, and temporary directories into a private TMPDIR.
func hostileEnv(t *testing.T, gitHost string) (tmp, sshLog string) {
	t.Helper()
	tmp = t.TempDir()
	t.Setenv("TMPDIR", tmp)
	bin := t.TempDir()
	sshLog = filepath.Join(bin, "ssh.log")
	script := "#!/bin/sh\necho \"$@\" >> " + sshLog + "\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_SSH_COMMAND", filepath.Join(bin, "ssh"))
	t.Setenv("GIT_SSH", filepath.Join(bin, "ssh"))
	t.Setenv("GIT_TERMINAL_PROMPT", "0")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_COUNT", "2")
	t.Setenv("GIT_CONFIG_KEY_0", "url.http://"+gitHost+"/.insteadOf")
	t.Setenv("GIT_CONFIG_VALUE_0", "https://github.com/")
	t.Setenv("GIT_CONFIG_KEY_1", "protocol.file.allow")
	t.Setenv("GIT_CONFIG_VALUE_1", "always")
	t.Setenv("NO_PROXY", "*")
	return tmp, sshLog
}

const sha40 = "0123456789abcdef0123456789abcdef01234567"

// remoteForms are the ways a kustomization entry can name a location outside
// the repository; %[1]s is the HTTP recorder, %[2]s the git server. pinned
// forms pass the policy's floating-remote rule and are refused as invalid
// input (exit 4); the others are refused by the policy (exit 3).
var remoteForms = []struct {
	name, entry string
	pinned      bool
}{
	{"http", "http://%[1]s/p.yaml", false},
	{"HTTP", "HTTP://%[1]s/p.yaml", false},
	{"https", "https://%[1]s/p.yaml", false},
	{"HtTpS", "HtTpS://%[1]s/p.yaml", false},
	{"http pinned", "http://%[1]s/" + sha40 + "/p.yaml", true},
	{"git::", "git::http://%[2]s/org/repo.git", false},
	{"git:: pinned", "git::http://%[2]s/org/repo.git?ref=" + sha40, true},
	{"https git tag", "http://%[2]s/org/repo.git?ref=v1", false},
	{"scp git@", "git@127.0.0.1:org/repo", false},
	{"scp user@host", "user@host.example.test:org/repo", false},
	{"file", "file:///etc/passwd", false},
	{"github tag", "github.com/org/repo?ref=v1", false},
	{"ssh", "ssh://git@127.0.0.1/org/repo", false},
}

// loadingFields are the kustomization fields that make kustomize load
// something; %s is the entry. field is how the refusal names it.
var loadingFields = []struct {
	field, yaml string
	chartRepo   bool // a chart repository: an http(s) one is refused unpinned (no chart source), anything else invalid
}{
	{"resources[1]", "resources: [../../base, %q]\n", false},
	{"components[0]", "resources: [../../base]\ncomponents: [%q]\n", false},
	{"bases[0]", "resources: [../../base]\nbases: [%q]\n", false},
	{"patchesStrategicMerge[0]", "resources: [../../base]\npatchesStrategicMerge: [%q]\n", false},
	{"patches[0].path", "resources: [../../base]\npatches: [{path: %q}]\n", false},
	{"patchesJson6902[0].path", "resources: [../../base]\npatchesJson6902: [{target: {kind: Deployment, name: web}, path: %q}]\n", false},
	{"generators[0]", "resources: [../../base]\ngenerators: [%q]\n", false},
	{"transformers[0]", "resources: [../../base]\ntransformers: [%q]\n", false},
	{"validators[0]", "resources: [../../base]\nvalidators: [%q]\n", false},
	{"configurations[0]", "resources: [../../base]\nconfigurations: [%q]\n", false},
	{"crds[0]", "resources: [../../base]\ncrds: [%q]\n", false},
	{"openapi.path", "resources: [../../base]\nopenapi: {path: %q}\n", false},
	{"replacements[0].path", "resources: [../../base]\nreplacements: [{path: %q}]\n", false},
	{"configMapGenerator[0].files[0]", "resources: [../../base]\nconfigMapGenerator: [{name: loot, files: [%q]}]\n", false},
	{"configMapGenerator[0].files[0]", "resources: [../../base]\nconfigMapGenerator: [{name: loot, files: [\"creds=%s\"]}]\n", false},
	{"configMapGenerator[0].envs[0]", "resources: [../../base]\nconfigMapGenerator: [{name: loot, envs: [%q]}]\n", false},
	{"configMapGenerator[0].env", "resources: [../../base]\nconfigMapGenerator: [{name: loot, env: %q}]\n", false},
	{"secretGenerator[0].files[0]", "resources: [../../base]\nsecretGenerator: [{name: loot, files: [%q]}]\n", false},
	{"secretGenerator[0].files[0]", "resources: [../../base]\nsecretGenerator: [{name: loot, files: [\"creds=%s\"]}]\n", false},
	{"secretGenerator[0].envs[0]", "resources: [../../base]\nsecretGenerator: [{name: loot, envs: [%q]}]\n", false},
	{"helmCharts[0].valuesFile", "resources: [../../base]\nhelmCharts: [{name: c, version: 1.2.3, valuesFile: %q}]\n", false},
	{"helmCharts[0].additionalValuesFiles[0]", "resources: [../../base]\nhelmCharts: [{name: c, version: 1.2.3, additionalValuesFiles: [%q]}]\n", false},
	{"helmGlobals.chartHome", "resources: [../../base]\nhelmGlobals: {chartHome: %q}\n", false},
	{"helmGlobals.configHome", "resources: [../../base]\nhelmGlobals: {configHome: %q}\n", false},
	{"helmCharts[0].repo", "resources: [../../base]\nhelmCharts: [{name: c, version: 1.2.3, repo: %q}]\n", true},
	{"helmChartInflationGenerator[0].values", "resources: [../../base]\nhelmChartInflationGenerator: [{chartName: c, chartVersion: 1.2.3, values: %q}]\n", false},
}

// TestRemoteEntriesAreNeverFetched writes every loading field with every
// remote form into an app and renders it as Argo CD would: each must be
// refused before krusty runs, naming the kustomization file and the field,
// while an HTTP server and a git server on 127.0.0.1 record that nothing
// ever connected and no kustomize clone appears in TMPDIR.
func TestRemoteEntriesAreNeverFetched(t *testing.T) {
	rec := &recorder{}
	httpHost := startRecorded(t, rec, "http", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched-from-the-network}\n"))
	}))
	gitHost := startGitServer(t, rec)
	tmp, sshLog := hostileEnv(t, gitHost)
	const kfile = "apps/web/overlays/staging/kustomization.yaml"
	msgs := golden.ErrorLines(t, "testdata/remote-entries.golden", len(loadingFields)*len(remoteForms))
	for _, f := range loadingFields {
		for _, form := range remoteForms {
			// Not Sprintf: a form naming neither server got %!(EXTRA ...) appended.
			entry := strings.NewReplacer("%[1]s", httpHost, "%[2]s", gitHost).Replace(form.entry)
			t.Run(f.field+"/"+form.name, func(t *testing.T) {
				files := repoFiles("r.example.test/web@" + digest)
				files[kfile] = fmt.Sprintf(f.yaml, entry)
				_, err := generateApp(t, writeRepo(t, files), "rev", nil)
				want := exitcode.Refused
				if form.pinned || f.chartRepo {
					want = exitcode.Invalid
				}
				if l := strings.ToLower(entry); f.chartRepo && (strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")) {
					want = exitcode.Refused
				}
				if got := exitcode.Code(err); got != want {
					t.Errorf("exit %d, want %d: %v", got, want, err)
				}
				if err != nil {
					// A refusal names the field in its finding, invalid
					// input in its message (remote-entries.golden, where a
					// refusal by krusty would show too).
					got := findingOf(t, err)
					if got.file != kfile || (want == exitcode.Refused && got.field != f.field) {
						t.Errorf("the error names %+v, want %s and %s: %v", got, kfile, f.field, err)
					}
					msgs(t.Name(), errors.New(strings.NewReplacer(httpHost, "HTTP-HOST", gitHost, "GIT-HOST").Replace(err.Error())))
				}
				if seen := rec.take(); len(seen) > 0 {
					t.Errorf("the render reached the network: %v", seen)
				}
				if data, _ := os.ReadFile(sshLog); len(data) > 0 {
					t.Errorf("the render ran ssh: %s", data)
					_ = os.Remove(sshLog)
				}
				if clones, _ := filepath.Glob(filepath.Join(tmp, "kustomize-*")); len(clones) > 0 {
					t.Errorf("the render cloned into TMPDIR: %v", clones)
					for _, c := range clones {
						_ = os.RemoveAll(c)
					}
				}
			})
		}
	}
}

// TestNestedRemoteEntryIsRefused: a hostile field in a base the app
// includes is refused naming the base's kustomization file.
func TestNestedRemoteEntryIsRefused(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	httpHost := startRecorded(t, rec, "http", http.NotFoundHandler())
	files := repoFiles("r.example.test/web@" + digest)
	files["apps/web/base/kustomization.yaml"] = "resources: [deploy.yaml]\npatches: [{path: \"HTTP://" + httpHost + "/p.yaml\"}]\n"
	_, err := generateApp(t, writeRepo(t, files), "rev", nil)
	if exitcode.Code(err) != exitcode.Refused {
		t.Fatalf("got %v", err)
	}
	if got := findingOf(t, err); got.file != "apps/web/base/kustomization.yaml" || got.field != "patches[0].path" {
		t.Errorf("refusal names %+v: %v", got, err)
	}
	if seen := rec.take(); len(seen) > 0 {
		t.Errorf("the render reached the network: %v", seen)
	}
}

// TestLocalEntriesStillRender: the refusal is about what an entry is, not
// how it looks: local paths with dots, colons in keys and inline patches
// keep rendering.
func TestLocalEntriesStillRender(t *testing.T) {
	t.Parallel()
	files := repoFiles("r.example.test/web@" + digest)
	files["apps/web/overlays/staging/kustomization.yaml"] = `resources: [../../base]
configMapGenerator:
  - {name: conf, files: [app.v2.conf, "renamed=app.v2.conf"], envs: [vars.env]}
patchesStrategicMerge:
  - |-
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web}
    spec: {replicas: 3}
patches:
  - path: patch.yaml
`
	files["apps/web/overlays/staging/app.v2.conf"] = "a=b\n"
	files["apps/web/overlays/staging/vars.env"] = "A=B\n"
	files["apps/web/overlays/staging/patch.yaml"] = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, labels: {patched: \"yes\"}}\n"
	res, err := generateApp(t, writeRepo(t, files), "rev", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Manifests), "patched") || !strings.Contains(string(res.Manifests), "renamed") {
		t.Errorf("local entries were not rendered:\n%s", res.Manifests)
	}
}

// TestMissingLocalEntryIsRefusedBeforeKrusty: a loaded path must exist
// inside the repository root; the error names the file and the field, never
// the machine's path of the root, and reads the same whether a path outside
// the root exists or not.
func TestMissingLocalEntryIsRefusedBeforeKrusty(t *testing.T) {
	t.Parallel()
	cases := []struct{ field, yaml, twin string }{
		{"patches[0].path", "resources: [../../base]\npatches: [{path: missing.yaml}]\n", ""},
		{"configMapGenerator[0].files[0]", "resources: [../../base]\nconfigMapGenerator: [{name: c, files: [%s]}]\n", "/etc/hostname"},
		{"crds[0]", "resources: [../../base]\ncrds: [%s]\n", "../../../../../../../../../../etc/passwd"},
		{"resources[1]", "resources: [../../base, %s]\n", "/etc/passwd"},
	}
	record := golden.ErrorLines(t, "testdata/missing-local-entry.golden", len(cases))
	for _, tc := range cases {
		var msgs []string
		for _, entry := range []string{tc.twin, tc.twin + "-no-such-file"} {
			files := repoFiles("r.example.test/web@" + digest)
			files["apps/web/overlays/staging/kustomization.yaml"] = strings.ReplaceAll(tc.yaml, "%s", entry)
			root := writeRepo(t, files)
			_, err := generateApp(t, root, "rev", nil)
			if !errors.Is(err, exitcode.ErrInvalid) || findingOf(t, err).file != "apps/web/overlays/staging/kustomization.yaml" {
				t.Errorf("%s %q: got %v, want an invalid-input error naming the file", tc.field, entry, err)
				continue
			}
			// The field and the absence of a machine path: missing-local-entry.golden.
			msg := err.Error()
			if entry != "" {
				msg = strings.ReplaceAll(msg, entry, "ENTRY")
			}
			if strings.Contains(msg, root) {
				t.Errorf("%s: the error names a machine path: %v", tc.field, err)
			}
			if len(msgs) == 0 {
				record(tc.field, errors.New(msg))
			}
			msgs = append(msgs, msg)
			if tc.twin == "" {
				break
			}
		}
		if len(msgs) == 2 && msgs[0] != msgs[1] {
			t.Errorf("%s: an existing and a missing path outside the root read differently:\n%s\n%s", tc.field, msgs[0], msgs[1])
		}
	}
}
