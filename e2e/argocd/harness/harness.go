// Package harness is the version-independent body of the Argo CD CMP
// compatibility tests. The nested modules ../v2 and ../v3 each provide a
// Driver built on that Argo CD release's own packages (cmpserver,
// util/app/discovery, util/cmp); this package builds throughline, writes a
// fixture GitOps repository, starts the CMP server with the repository's
// plugin.yaml and checks what Argo CD gets back.
package harness

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	"sigs.k8s.io/yaml"
)

// Driver talks to a CMP server socket exactly as argocd-repo-server does.
type Driver interface {
	// Match streams repoPath and calls MatchRepository on the socket.
	Match(ctx context.Context, sock, appPath, repoPath string, env []string) (supported bool, err error)
	// Detect runs discovery.DetectConfigManagementPlugin (plugin "" scans
	// the socket directory, as for an Application without plugin.name).
	Detect(ctx context.Context, appPath, repoPath, plugin string, env []string) error
	// Generate is runConfigManagementPluginSidecars: detect on repoPath,
	// CheckPluginConfiguration, then GenerateManifest streaming rootPath;
	// excludes are the repo-server's --plugin-tar-exclude globs (both
	// streams leave out what they match).
	Generate(ctx context.Context, appPath, repoPath, rootPath, plugin string, env, excludes []string) ([]string, error)
	// Parameters calls GetParametersAnnouncement and returns the names.
	Parameters(ctx context.Context, appPath, repoPath string, env []string) ([]string, error)
}

// StartFunc starts a CMP server reading configDir/plugin.yaml; it listens on
// $ARGOCD_PLUGINSOCKFILEPATH/<name>.sock and stops in t.Cleanup.
type StartFunc func(t testing.TB, configDir string)

const (
	// pluginName is what an Application names in spec.source.plugin.name:
	// metadata.name of plugin.yaml (no spec.version: Argo CD 4.0 refuses
	// it); the socket is named so.
	pluginName = "throughline-v1"
	SocketName = pluginName + ".sock"
	serverEnv  = "THROUGHLINE_E2E_ARGOCD_CMP_SERVER"
)

// Main lets the test binary double as argocd-cmp-server: StartProcess
// re-executes it with serverEnv set, and then only cmpServer runs (Argo CD's
// own cobra command, flags and all).
func Main(m *testing.M, cmpServer func() error) {
	if os.Getenv(serverEnv) != "" {
		if err := cmpServer(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// StartProcess runs argocd-cmp-server as a separate process.
func StartProcess(t testing.TB, configDir string) {
	exe, err := os.Executable()
	Must(t, err)
	cmd := exec.Command(exe, "--config-dir-path", configDir, "--loglevel", "info")
	cmd.Env = append(os.Environ(), serverEnv+"=1")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	Must(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); t.Failed() || testing.Verbose() {
			t.Logf("argocd-cmp-server output (last %d lines):\n%s", min(len(lines), 20), strings.Join(lines[max(0, len(lines)-20):], "\n"))
		}
	})
}

// Run is the whole compatibility test against one server; hostile adds
// the hostile-repository cases (hostile.go), which take ~40 s and need run
// only once per Argo CD release.
func Run(t *testing.T, d Driver, start StartFunc, hostile bool) {
	run(t, d, start, hostile, false)
}

// RunResident is Run (without the hostile cases) with the sidecar's
// resident renderer: throughline cmp serve runs beside the CMP server, and
// the plugin, inheriting THROUGHLINE_RESIDENT_DIR, renders through it
// (resident.go). It then checks that the resident renderer served every
// generate, and that once it is killed the CMP server still returns the
// correct render (the plugin's in-process fallback).
func RunResident(t *testing.T, d Driver, start StartFunc) {
	run(t, d, start, false, true)
}

func run(t *testing.T, d Driver, start StartFunc, hostile, withResident bool) {
	bin := Throughline(t)
	top := RepoRoot(t)
	base, err := os.MkdirTemp("/tmp", "cmp") // unix socket paths: < 108 bytes
	Must(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	sockDir, configDir, workDir := filepath.Join(base, "s"), filepath.Join(base, "c"), filepath.Join(base, "w")
	for _, dir := range []string{sockDir, configDir, workDir} {
		Must(t, os.MkdirAll(dir, 0o755))
	}
	cfg, err := os.ReadFile(filepath.Join(top, "plugin.yaml"))
	Must(t, err)
	Must(t, os.WriteFile(filepath.Join(configDir, "plugin.yaml"), pluginConfig(t, cfg), 0o644))
	t.Setenv("ARGOCD_PLUGINSOCKFILEPATH", sockDir) // server and repo-server side
	t.Setenv("ARGOCD_CMP_WORKDIR", workDir)        // else the server wipes $TMPDIR/_cmp_server
	t.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("THROUGHLINE_CACHE_DIR", filepath.Join(base, "cache")) // the sidecar's render cache
	var h *hostileNet
	if hostile {
		h = setupHostile(t) // before the server starts: the plugin inherits its environment
		h.repo = filepath.Join(base, "hostile")
	}
	var res *residentProcess
	if withResident {
		res = startResident(t, bin, filepath.Join(base, "r")) // before the server: the plugin inherits its directory
	}
	start(t, configDir)
	sock := filepath.Join(sockDir, SocketName)
	waitSocket(t, sockDir, sock)

	repo := filepath.Join(base, "repo")
	writeFixture(t, repo)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	app := func(rel string) string { return filepath.Join(repo, rel) }
	staging, unpinned := "apps/checkout/overlays/staging", "apps/checkout/overlays/unpinned"
	envStaging := "ARGOCD_ENV_ENVIRONMENT=staging" // spec.source.plugin.env

	t.Run("discovery", func(t *testing.T) {
		for rel, want := range map[string]bool{staging: true, "apps/cron": true, "apps/checkout/base": false, "apps/unmarked": false} {
			env := Env(repo, rel, envStaging)
			got, err := d.Match(ctx, sock, app(rel), repo, env)
			Must(t, err)
			if got != want {
				t.Errorf("MatchRepository(%s) = %v, want %v", rel, got, want)
			}
			if err := d.Detect(ctx, app(rel), repo, "", env); (err == nil) != want {
				t.Errorf("DetectConfigManagementPlugin(%s, plugin \"\"): err = %v, want match %v", rel, err, want)
			}
		}
		// plugin.name "throughline-v1" in the Application: used without discovery
		Must(t, d.Detect(ctx, app(staging), repo, pluginName, Env(repo, staging, envStaging)))
	})

	t.Run("parameters", func(t *testing.T) {
		names, err := d.Parameters(ctx, app(staging), repo, Env(repo, staging, envStaging))
		Must(t, err)
		if !slices.Contains(names, "environment") {
			t.Errorf("announced parameters %v, want one named environment", names)
		}
	})

	// spec.source.plugin.parameters [{name: environment, string: production}]
	params := []string{`ARGOCD_APP_PARAMETERS=[{"name":"environment","string":"production"}]`, "PARAM_ENVIRONMENT=production"}
	for _, tc := range []struct {
		name, rel, sourcePath, root, plugin string
		env                                 []string
		environment                         string
		// spec are more fields the Acceptance must say.
		spec map[string]string
	}{
		{"kustomize overlay", staging, staging, "", "", []string{envStaging}, "staging", map[string]string{"sourcePath": staging}},
		// Application.spec.source.path is passed through as written.
		{"source path ./x/", staging, "./" + staging + "/", "", "", []string{envStaging}, "staging", nil},
		// plugin.name set, as in examples/gitops-env/clusters/*/checkout.yaml
		{"named plugin with parameter", staging, staging, "", pluginName, params, "production", nil},
		{"plain YAML", "apps/cron", "apps/cron", "", "", []string{envStaging}, "staging", nil},
		// argocd-repo-server --plugin-use-manifest-generate-paths and the
		// annotation manifest-generate-paths: ".;../../base" stream only the
		// common parent of the paths, apps/checkout, not the repository:
		// the Acceptance still names the app's whole path.
		{"manifest-generate-paths", staging, staging, "apps/checkout", "", []string{envStaging}, "staging", map[string]string{"sourcePath": staging}},
	} {
		t.Run("generate "+tc.name, func(t *testing.T) {
			env := Env(repo, tc.sourcePath, tc.env...)
			got, err := d.Generate(ctx, app(tc.rel), repo, filepath.Join(repo, tc.root), tc.plugin, env, nil)
			Must(t, err)
			want := map[string]string{"environment": tc.environment}
			maps.Copy(want, tc.spec)
			checkAccepted(t, got, repo, tc.rel, want)
			for _, m := range got {
				if strings.Contains(m, `"kind":"Acceptance"`) && !strings.Contains(m, fixtureDigest) {
					t.Errorf("the Acceptance does not declare the digest %s: %s", fixtureDigest, m)
				}
			}
		})
	}

	t.Run("refuse unpinned", func(t *testing.T) {
		env := Env(repo, unpinned, envStaging)
		got, err := d.Generate(ctx, app(unpinned), repo, repo, "", env, nil)
		if err == nil || len(got) != 0 {
			t.Fatalf("GenerateManifest(%s) = %d manifests, err %v; want refusal", unpinned, len(got), err)
		}
		for _, want := range []string{"exit status 3", "nginx:1.27", "ghcr.io/acme/checkout:1.4.2"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error does not name %q: %v", want, err)
			}
		}
		// The same command run directly: exit 3, nothing on stdout.
		cmd := exec.CommandContext(ctx, bin, "cmp", "generate")
		cmd.Dir, cmd.Env = app(unpinned), append(os.Environ(), env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		if code := exitCode(err); code != 3 || stdout.Len() != 0 {
			t.Errorf("throughline cmp generate: exit %d (want 3), stdout %q, stderr %q", code, stdout.String(), stderr.String())
		}
	})

	t.Run("examples/gitops-env", func(t *testing.T) {
		exRoot := filepath.Join(top, "examples", "gitops-env")
		var apps []string
		_ = filepath.WalkDir(exRoot, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.Name() == ".throughline" && !e.IsDir() {
				apps = append(apps, filepath.Dir(p))
			}
			return nil
		})
		if len(apps) == 0 {
			t.Skip("no app with a .throughline marker under examples/gitops-env")
		}
		// The example's chart app pulls its chart from an OCI registry by
		// the pinned digest: the plugin and the CLI find it in the chart
		// cache (THROUGHLINE_CACHE_DIR/charts), seeded from the layout
		// committed beside the example, as make demo does.
		seedChartCache(t, filepath.Join(top, "examples", "charts", "oci"), filepath.Join(base, "cache", "charts"))
		charts := 0
		for _, a := range apps {
			rel, _ := filepath.Rel(exRoot, a)
			t.Run(rel, func(t *testing.T) {
				// The Application of apps/<app>/overlays/<env> is named after
				// the app (the registry's name of the path).
				env := Env(exRoot, rel, "ARGOCD_APP_NAME="+strings.Split(filepath.ToSlash(rel), "/")[1])
				got, err := d.Generate(ctx, a, exRoot, exRoot, "", env, nil)
				_, hashErr := throughline(t, "render", "--hash", "--root", exRoot, a)
				switch code := exitCode(hashErr); code {
				case 0:
					Must(t, err)
					checkAccepted(t, got, exRoot, rel, nil)
					if _, err := os.Stat(filepath.Join(a, "Chart.yaml")); err == nil {
						charts++
					}
				case 3:
					if err == nil || len(got) != 0 || !strings.Contains(err.Error(), "exit status 3") {
						t.Errorf("render refuses %s, but GenerateManifest returned %d manifests, err %v", rel, len(got), err)
					}
				default:
					t.Errorf("throughline render --hash %s: exit %d: %v", rel, code, hashErr)
				}
			})
		}
		if charts < 2 {
			t.Errorf("%d chart apps of examples/gitops-env rendered through the CMP server, want the storefront's staging and production", charts)
		}
	})

	if h != nil {
		t.Run("hostile repository", func(t *testing.T) { runHostile(t, d, h) })
	}
	if res != nil {
		t.Run("resident renderer", func(t *testing.T) {
			res.check(t, ctx, d, repo, staging, envStaging)
		})
	}
}

// Env is what argocd-repo-server passes (newEnv + getPluginEnvs) for an
// Application of plugin type; extra holds the plugin env and parameters,
// and replaces a default of the same name. ARGOCD_APP_NAMESPACE is the
// Application's destination namespace: by default the one the app's
// kustomization sets, as the Applications of these repositories name it.
func Env(repo, sourcePath string, extra ...string) []string {
	rev := gitRevision(repo)
	if rev == "" {
		rev = strings.Repeat("0", 40)
	}
	return overrideEnv([]string{
		"ARGOCD_APP_NAME=checkout",
		"ARGOCD_APP_NAMESPACE=" + kustomizationNamespace(filepath.Join(repo, sourcePath)),
		"ARGOCD_APP_PROJECT_NAME=default",
		"ARGOCD_APP_REVISION=" + rev,
		"ARGOCD_APP_REVISION_SHORT=" + rev[:7],
		"ARGOCD_APP_REVISION_SHORT_8=" + rev[:8],
		"ARGOCD_APP_SOURCE_REPO_URL=https://git.example.com/acme/gitops-env.git",
		"ARGOCD_APP_SOURCE_PATH=" + sourcePath,
		"ARGOCD_APP_SOURCE_TARGET_REVISION=main",
		"KUBE_VERSION=1.31.0",
		"KUBE_API_VERSIONS=v1,apps/v1,batch/v1,throughline.dev/v1alpha1",
	}, extra)
}

// overrideEnv is env with each entry of extra replacing the entry of the
// same name, or appended.
func overrideEnv(env, extra []string) []string {
	for _, kv := range extra {
		k, _, _ := strings.Cut(kv, "=")
		i := slices.IndexFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") })
		if i >= 0 {
			env[i] = kv
		} else {
			env = append(env, kv)
		}
	}
	return env
}

// kustomizationNamespace is the namespace: of the kustomization in dir, or
// of a chart app's Helm parameters file ("" when there is none).
func kustomizationNamespace(dir string) string {
	for _, f := range []string{"kustomization.yaml", "throughline-helm.yaml"} {
		data, _ := os.ReadFile(filepath.Join(dir, f))
		if m := regexp.MustCompile(`(?m)^namespace:\s*(\S+)\s*(#.*)?$`).FindSubmatch(data); m != nil {
			return string(m[1])
		}
	}
	return ""
}

// seedChartCache copies the blobs of the OCI image layout src into the
// chart cache dir: the manifests index.json lists under manifests/, the
// others under blobs/ (the cache is keyed by digest and verified on read).
func seedChartCache(t *testing.T, src, dir string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(src, "index.json"))
	Must(t, err)
	var index struct{ Manifests []struct{ Digest string } }
	Must(t, json.Unmarshal(data, &index))
	blobs, err := os.ReadDir(filepath.Join(src, "blobs", "sha256"))
	Must(t, err)
	for _, b := range blobs {
		kind := "blobs"
		if slices.ContainsFunc(index.Manifests, func(m struct{ Digest string }) bool { return m.Digest == "sha256:"+b.Name() }) {
			kind = "manifests"
		}
		data, err := os.ReadFile(filepath.Join(src, "blobs", "sha256", b.Name()))
		Must(t, err)
		Must(t, os.MkdirAll(filepath.Join(dir, kind, "sha256"), 0o755))
		Must(t, os.WriteFile(filepath.Join(dir, kind, "sha256", b.Name()), data, 0o644))
	}
}

// checkAccepted checks a GenerateManifest result: the objects `throughline
// render` prints, plus exactly one Acceptance whose spec.renderedHash equals
// `throughline render --hash` and the hash recomputed here from the README's "The rendered hash",
// and whose spec has the wantSpec string fields.
func checkAccepted(t *testing.T, manifests []string, repo, rel string, wantSpec map[string]string) {
	t.Helper()
	var objs []map[string]any
	var acceptance map[string]any
	for _, m := range manifests {
		var o map[string]any
		Must(t, json.Unmarshal([]byte(m), &o))
		if o["apiVersion"] == "throughline.dev/v1alpha1" && o["kind"] == "Acceptance" {
			if acceptance != nil {
				t.Fatalf("more than one Acceptance in %d manifests", len(manifests))
			}
			acceptance = o
			continue
		}
		objs = append(objs, o)
	}
	if acceptance == nil || len(objs) == 0 {
		t.Fatalf("want objects plus one Acceptance, got:\n%s", strings.Join(manifests, "\n"))
	}
	spec, _ := acceptance["spec"].(map[string]any)
	gotHash, _ := spec["renderedHash"].(string)
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(gotHash) {
		t.Fatalf("Acceptance spec.renderedHash %q is not sha256:<64 hex>: %v", gotHash, acceptance)
	}
	out, err := throughline(t, "render", "--hash", "--root", repo, filepath.Join(repo, rel))
	Must(t, err)
	if want := strings.TrimSpace(out); gotHash != want {
		t.Errorf("Acceptance spec.renderedHash %s, throughline render --hash prints %q", gotHash, want)
	}
	if want := RenderedHash(t, objs); gotHash != want {
		t.Errorf("Acceptance spec.renderedHash %s, recomputed from the %d objects Argo CD got: %s", gotHash, len(objs), want)
	}
	out, err = throughline(t, "render", "--root", repo, filepath.Join(repo, rel))
	Must(t, err)
	var rendered []map[string]any
	for _, doc := range regexp.MustCompile(`(?m)^---[ \t]*$`).Split(out, -1) {
		var o map[string]any
		Must(t, yaml.Unmarshal([]byte(doc), &o))
		if o != nil && o["kind"] != "Acceptance" {
			rendered = append(rendered, o)
		}
	}
	if g, w := canonical(t, objs), canonical(t, rendered); !slices.Equal(g, w) {
		t.Errorf("objects from Argo CD differ from throughline render:\nargo:\n%s\nrender:\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	// The render is a pure function of the app's files: the revision Argo CD
	// streamed (ARGOCD_APP_REVISION) must not reach the Acceptance, or every
	// commit anywhere in the repository would make the app OutOfSync.
	if rev, ok := spec["sourceRevision"]; ok {
		t.Errorf("Acceptance spec.sourceRevision = %v: the plugin must not write the revision", rev)
	}
	for k, want := range wantSpec {
		if got, _ := spec[k].(string); got != want {
			t.Errorf("Acceptance spec.%s = %q, want %q", k, got, want)
		}
	}
	t.Logf("%d objects + Acceptance %s", len(objs), gotHash)
}

// RenderedHash recomputes the README's "The rendered hash" independently: objects
// sorted by (group, kind, namespace, name), each RFC 8785 JSON plus "\n".
func RenderedHash(t *testing.T, objs []map[string]any) string {
	t.Helper()
	type keyed struct {
		key  [4]string
		text string
	}
	var ks []keyed
	for _, o := range objs {
		group, _, found := strings.Cut(fmt.Sprint(o["apiVersion"]), "/")
		if !found {
			group = ""
		}
		md, _ := o["metadata"].(map[string]any)
		ns, _ := md["namespace"].(string)
		name, _ := md["name"].(string)
		ks = append(ks, keyed{[4]string{group, fmt.Sprint(o["kind"]), ns, name}, canonical(t, []map[string]any{o})[0]})
	}
	slices.SortFunc(ks, func(a, b keyed) int { return slices.Compare(a.key[:], b.key[:]) })
	h := sha256.New()
	for _, k := range ks {
		h.Write([]byte(k.text + "\n"))
	}
	return fmt.Sprintf("sha256:%x", h.Sum(nil))
}

// canonical returns the RFC 8785 form of each object, sorted.
func canonical(t *testing.T, objs []map[string]any) []string {
	t.Helper()
	var out []string
	for _, o := range objs {
		b, err := json.Marshal(o)
		Must(t, err)
		c, err := jcs.Transform(b)
		Must(t, err)
		out = append(out, string(c))
	}
	slices.Sort(out)
	return out
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Throughline builds ./cmd/throughline, ./cmd/throughline-cmp and
// ./cmd/throughline-cmp-render of the enclosing repository once per test
// process into one directory and returns throughline's path.
func Throughline(t testing.TB) string {
	t.Helper()
	top := RepoRoot(t)
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "throughline-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "throughline")
		// throughline-cmp next to it: plugin.yaml's command, found on PATH;
		// throughline-cmp-render beside it, which it renders with when the
		// resident renderer gives no render.
		pkgs := []string{"./cmd/throughline", "./cmd/throughline-cmp", "./cmd/throughline-cmp-render"}
		cmd := exec.Command("go", append([]string{"build", "-o", dir + string(os.PathSeparator)}, pkgs...)...)
		cmd.Dir = top
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build %s in %s: %w\n%s", strings.Join(pkgs, " "), top, err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// RepoRoot is the enclosing directory whose go.mod declares the main module.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	Must(t, err)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && regexp.MustCompile(`(?m)^module github\.com/throughline-dev/throughline\s*$`).Match(b) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no enclosing directory with the throughline go.mod")
		}
		dir = parent
	}
}

func throughline(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(Throughline(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("throughline %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), err
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func waitSocket(t testing.TB, dir, sock string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if fi, err := os.Stat(sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(dir)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("socket %s never appeared (plugin.yaml metadata.name); %s holds %v", filepath.Base(sock), dir, names)
		}
	}
}

func gitRevision(repo string) string {
	out, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// Must fails the test on a non-nil error.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
