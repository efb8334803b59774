package harness

// Hostile repositories through Argo CD's real cmp-server (issue 15): remote
// kustomization entries are refused before anything is fetched, YAML alias
// bombs are refused naming the file, and a Secret's values never reach the
// error Argo CD shows. The unit tests (cmp/nofetch_test.go, render's
// TestAliasBombsAreRefused, cmp/secret_test.go) hold the full tables; these
// cases check that the same refusals come out of the sidecar as Argo CD
// runs it. The server helpers below are copies of cmp/nofetch_test.go's.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// WrapperEnv, when set (e.g. to "/usr/bin/time -v"), prefixes the plugin's
// generate command in the plugin.yaml the server reads: a measurement run
// (the bomb cases log what the wrapper printed on stderr), never a test.
const WrapperEnv = "THROUGHLINE_E2E_PLUGIN_WRAPPER"

// pluginConfig is the repository's plugin.yaml, with the generate command
// wrapped when WrapperEnv is set.
func pluginConfig(t *testing.T, cfg []byte) []byte {
	t.Helper()
	wrap := strings.Fields(os.Getenv(WrapperEnv))
	if len(wrap) == 0 {
		return cfg
	}
	const cmd = "command: [throughline-cmp, generate]"
	if !strings.Contains(string(cfg), cmd) {
		t.Fatalf("%s: plugin.yaml has no %q to wrap", WrapperEnv, cmd)
	}
	t.Logf("%s: generate runs as %v throughline-cmp generate", WrapperEnv, wrap)
	return []byte(strings.Replace(string(cfg), cmd, "command: ["+strings.Join(wrap, ", ")+", throughline-cmp, generate]", 1))
}

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
// kustomization (tag v1) over git's smart HTTP (git http-backend behind
// net/http/cgi).
func startGitServer(t *testing.T, rec *recorder) string {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not on PATH")
	}
	execPath, err := exec.Command(gitBin, "--exec-path").Output()
	Must(t, err)
	backend := filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("git-http-backend: %v", err)
	}
	projects, work, home := t.TempDir(), t.TempDir(), t.TempDir()
	gitEnv := []string{"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0"}
	run := func(dir string, args ...string) {
		cmd := exec.Command(gitBin, args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), gitEnv...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	for name, body := range map[string]string{
		"kustomization.yaml": "resources: [cm.yaml]\n",
		"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cloned-from-the-network}\n",
	} {
		Must(t, os.WriteFile(filepath.Join(work, name), []byte(body), 0o644))
	}
	run(work, "init", "-q", "-b", "main")
	run(work, "add", ".")
	run(work, "-c", "user.name=t", "-c", "user.email=t@example.test", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "base")
	run(work, "tag", "v1")
	Must(t, os.MkdirAll(filepath.Join(projects, "org"), 0o755))
	run(projects, "clone", "-q", "--bare", work, filepath.Join(projects, "org", "repo.git"))
	h := &cgi.Handler{Path: backend, Env: append([]string{"GIT_PROJECT_ROOT=" + projects, "GIT_HTTP_EXPORT_ALL=1"}, gitEnv...)}
	return startRecorded(t, rec, "git", h)
}

// hostileNet is the network a hostile repository would reach: an HTTP
// recorder, a git smart-HTTP recorder, ssh through a script that logs its
// arguments, and a private TMPDIR where a kustomize clone would land.
type hostileNet struct {
	rec               *recorder
	httpHost, gitHost string
	tmp, sshLog       string
	repo              string // the hostile GitOps repository
	index             *indexRepo
}

// setupHostile starts the recorders and points the environment at them. It
// runs before the cmp-server starts: the plugin inherits the server's
// environment (os.Environ() plus what the repo-server sends), so github.com
// resolves to the git recorder and ssh to the logging script there too.
func setupHostile(t *testing.T) *hostileNet {
	t.Helper()
	h := &hostileNet{rec: &recorder{}}
	h.httpHost = startRecorded(t, h.rec, "http", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched-from-the-network}\n"))
	}))
	h.gitHost = startGitServer(t, h.rec)
	h.index = startIndexRepo(t)
	h.tmp = t.TempDir()
	t.Setenv("TMPDIR", h.tmp)
	bin := t.TempDir()
	h.sshLog = filepath.Join(bin, "ssh.log")
	Must(t, os.WriteFile(filepath.Join(bin, "ssh"), []byte("#!/bin/sh\necho \"$@\" >> "+h.sshLog+"\nexit 1\n"), 0o755))
	for k, v := range map[string]string{
		"GIT_SSH_COMMAND":     filepath.Join(bin, "ssh"),
		"GIT_SSH":             filepath.Join(bin, "ssh"),
		"GIT_TERMINAL_PROMPT": "0",
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_CONFIG_GLOBAL":   "/dev/null",
		"GIT_CONFIG_COUNT":    "2",
		"GIT_CONFIG_KEY_0":    "url.http://" + h.gitHost + "/.insteadOf",
		"GIT_CONFIG_VALUE_0":  "https://github.com/",
		"GIT_CONFIG_KEY_1":    "protocol.file.allow",
		"GIT_CONFIG_VALUE_1":  "always",
		"NO_PROXY":            "*",
	} {
		t.Setenv(k, v)
	}
	return h
}

// checkQuiet fails the test if anything reached a recorder, ran ssh or
// left a kustomize clone in TMPDIR since the last check.
func (h *hostileNet) checkQuiet(t *testing.T) {
	t.Helper()
	if seen := h.rec.take(); len(seen) > 0 {
		t.Errorf("the render reached the network: %v", seen)
	}
	if data, _ := os.ReadFile(h.sshLog); len(data) > 0 {
		t.Errorf("the render ran ssh: %s", data)
		_ = os.Remove(h.sshLog)
	}
	if clones, _ := filepath.Glob(filepath.Join(h.tmp, "kustomize-*")); len(clones) > 0 {
		t.Errorf("the render cloned into TMPDIR: %v", clones)
		for _, c := range clones {
			_ = os.RemoveAll(c)
		}
	}
}

// remoteForms name a location outside the repository; %[1]s is the HTTP
// recorder, %[2]s the git recorder. None is pinned, so each is refused by
// the policy (exit 3).
var remoteForms = []struct{ name, entry string }{
	{"HTTP", "HTTP://%[1]s/p.yaml"},
	{"https", "https://%[1]s/p.yaml"},
	{"git::", "git::http://%[2]s/org/repo.git"},
	{"scp", "git@127.0.0.1:org/repo"},
	{"github", "github.com/org/repo?ref=v1"},
}

// remoteFields are one loading field of each family; %s is the entry,
// field is how the refusal names it.
var remoteFields = []struct{ field, yaml string }{
	{"resources[1]", "resources: [cm.yaml, %q]\n"},
	{"patches[0].path", "resources: [cm.yaml]\npatches: [{path: %q}]\n"},
	{"patchesStrategicMerge[0]", "resources: [cm.yaml]\npatchesStrategicMerge: [%q]\n"},
	{"patchesJson6902[0].path", "resources: [cm.yaml]\npatchesJson6902: [{target: {version: v1, kind: ConfigMap, name: cm}, path: %q}]\n"},
	{"configMapGenerator[0].files[0]", "resources: [cm.yaml]\nconfigMapGenerator: [{name: loot, files: [\"creds=%s\"]}]\n"},
	{"secretGenerator[0].envs[0]", "resources: [cm.yaml]\nsecretGenerator: [{name: loot, envs: [%q]}]\n"},
	{"generators[0]", "resources: [cm.yaml]\ngenerators: [%q]\n"},
	{"openapi.path", "resources: [cm.yaml]\nopenapi: {path: %q}\n"},
	{"crds[0]", "resources: [cm.yaml]\ncrds: [%q]\n"},
}

const hostileCM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n"

// aliasBomb is a mapping of levels keys, each an anchored list of width
// aliases to the previous one (render/bomb_test.go): aliasBomb(9, 7) is 397
// bytes and expands to about 4.8 million nodes, aliasBomb(9, 10) to 3.5
// billion.
func aliasBomb(width, levels int) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [" + strings.TrimSuffix(strings.Repeat("lol,", width), ",") + "]\n")
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), width), ","))
	}
	return b.String()
}

func indent(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// bombCase is an app holding an alias bomb; want is the file the error
// must name.
type bombCase struct{ name, app, want string }

// plaintextSecretApp is the hostile app whose Secret carries stringData.
const plaintextSecretApp = "apps/secret/plaintext"

// secretValues are the values of the hostile Secrets; no error may hold one.
var secretValues = []string{"hunter2-plaintext-1", "hunter2-plaintext-2"}

// hostileRepo writes one app per remote case, per bomb and per Secret
// case into a second GitOps repository and commits it.
func hostileRepo(t *testing.T, h *hostileNet, repo string) (remote map[string]string, bombs []bombCase, secrets []string) {
	t.Helper()
	files := map[string]string{"README.md": "hostile GitOps repository\n"}
	app := func(rel string, fs map[string]string) {
		files[rel+"/.throughline"] = ""
		for name, body := range fs {
			files[rel+"/"+name] = body
		}
	}
	remote = map[string]string{}
	for i, f := range remoteFields {
		for j, form := range remoteForms {
			rel := fmt.Sprintf("apps/remote/%02d-%02d", i, j)
			remote[f.field+"/"+form.name] = rel
			app(rel, map[string]string{
				"kustomization.yaml": fmt.Sprintf(f.yaml, fmt.Sprintf(form.entry, h.httpHost, h.gitHost)),
				"cm.yaml":            hostileCM,
			})
		}
	}
	for _, size := range []struct {
		name          string
		width, levels int
	}{{"9x7", 9, 7}, {"9x10", 9, 10}} {
		bombCM := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\nbomb:\n" + indent(aliasBomb(size.width, size.levels))
		rel := "apps/bomb/" + size.name + "-resource"
		app(rel, map[string]string{"kustomization.yaml": "resources: [bomb.yaml]\n", "bomb.yaml": bombCM})
		bombs = append(bombs, bombCase{size.name + " resource file", rel, rel + "/bomb.yaml"})
		rel = "apps/bomb/" + size.name + "-patch"
		app(rel, map[string]string{
			"kustomization.yaml": "resources: [cm.yaml]\npatches: [{path: bomb.yaml}]\n", "cm.yaml": hostileCM, "bomb.yaml": bombCM,
		})
		bombs = append(bombs, bombCase{size.name + " patch file", rel, rel + "/bomb.yaml"})
	}
	dup := "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  password: " + secretValues[0] +
		"\n  password: " + secretValues[1] + "\n"
	app("apps/secret/kustomize", map[string]string{"kustomization.yaml": "resources: [s.yaml]\n", "s.yaml": dup})
	app("apps/secret/plain", map[string]string{"s.yaml": dup})
	secrets = []string{"apps/secret/kustomize", "apps/secret/plain"}
	// A well-formed Secret with values: refused by the secret-plaintext rule.
	app(plaintextSecretApp, map[string]string{"kustomization.yaml": "resources: [s.yaml]\n",
		"s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData:\n  password: " + secretValues[0] + "\n"})
	confinedApps(files, h)
	writeRepo(t, repo, files)
	return remote, bombs, secrets
}

// runHostile generates every hostile app through the cmp-server.
func runHostile(t *testing.T, d Driver, h *hostileNet) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	remote, bombs, secrets := hostileRepo(t, h, h.repo)
	h.checkQuiet(t) // writing the repository reached nothing
	generate := func(rel string) ([]string, error) {
		return d.Generate(ctx, filepath.Join(h.repo, rel), h.repo, h.repo, pluginName, Env(h.repo, rel, "ARGOCD_ENV_ENVIRONMENT=staging"), nil)
	}

	t.Run("remote entries are never fetched", func(t *testing.T) {
		for _, f := range remoteFields {
			for _, form := range remoteForms {
				name := f.field + "/" + form.name
				t.Run(name, func(t *testing.T) {
					rel := remote[name]
					got, err := generate(rel)
					if err == nil || len(got) != 0 {
						t.Fatalf("GenerateManifest = %d manifests, err %v; want a refusal", len(got), err)
					}
					for _, want := range []string{"exit status 3", rel + "/kustomization.yaml", f.field} {
						if !strings.Contains(err.Error(), want) {
							t.Errorf("the error does not name %q: %v", want, err)
						}
					}
					h.checkQuiet(t)
				})
			}
		}
	})

	t.Run("alias bombs", func(t *testing.T) {
		for _, b := range bombs {
			t.Run(b.name, func(t *testing.T) {
				start := time.Now()
				got, err := generate(b.app)
				elapsed := time.Since(start)
				if err == nil || len(got) != 0 {
					t.Fatalf("GenerateManifest = %d manifests, err %v; want a refusal", len(got), err)
				}
				for _, want := range []string{"exit status 4", b.want} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("the error does not name %q: %v", want, err)
					}
				}
				t.Logf("refused in %v (GenerateManifest wall time)%s", elapsed.Round(time.Millisecond), wrapperStats(err.Error()))
			})
		}
	})

	t.Run("environment identity", func(t *testing.T) { runEnvironmentIdentity(ctx, t, d) })

	runConfined(t, generate, h)

	// Issue 14: a plaintext Secret is refused (exit 3, secret-plaintext),
	// naming the Secret and its key, never the value.
	t.Run("plaintext secret", func(t *testing.T) {
		got, err := generate(plaintextSecretApp)
		if err == nil || len(got) != 0 {
			t.Fatalf("GenerateManifest = %d manifests, err %v; want a refusal", len(got), err)
		}
		for _, want := range []string{"exit status 3", "secret-plaintext", "Secret", "stringData.password"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not say %q: %v", want, err)
			}
		}
		if strings.Contains(err.Error(), secretValues[0]) {
			t.Errorf("the error Argo CD shows holds the Secret value: %v", err)
		}
	})

	t.Run("secret values", func(t *testing.T) {
		for _, rel := range secrets {
			t.Run(rel, func(t *testing.T) {
				got, err := generate(rel)
				if err == nil || len(got) != 0 {
					t.Fatalf("GenerateManifest = %d manifests, err %v; want a refusal", len(got), err)
				}
				if !strings.Contains(err.Error(), "exit status 4") || !strings.Contains(err.Error(), rel+"/") {
					t.Errorf("want exit 4 naming a file of %s: %v", rel, err)
				}
				for _, v := range secretValues {
					if strings.Contains(err.Error(), v) {
						t.Errorf("the error Argo CD shows holds the Secret value %q: %v", v, err)
					}
				}
			})
		}
	})
	h.checkQuiet(t)
}

// runEnvironmentIdentity is issue 14 item 2 through the cmp-server:
// examples/gitops-env (its throughline-policy.yaml declares dev, staging and
// production) rendered in production's path for a staging Application is
// refused naming the path's environment and what the Application claims;
// production's own Application renders, its Acceptance saying production.
func runEnvironmentIdentity(ctx context.Context, t *testing.T, d Driver) {
	ex := filepath.Join(RepoRoot(t), "examples", "gitops-env")
	production := "apps/checkout/overlays/production"
	app := filepath.Join(ex, production)
	staging := Env(ex, production, "ARGOCD_APP_NAME=checkout-staging", "ARGOCD_APP_NAMESPACE=checkout-staging",
		`ARGOCD_APP_PARAMETERS=[{"name":"environment","string":"staging"}]`, "PARAM_ENVIRONMENT=staging")
	got, err := d.Generate(ctx, app, ex, ex, pluginName, staging, nil)
	if err == nil || len(got) != 0 {
		t.Fatalf("GenerateManifest = %d manifests, err %v; want a refusal", len(got), err)
	}
	for _, want := range []string{"exit status 3", "throughline-policy.yaml", production, "environment production's, not staging's",
		`"checkout-staging"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	// Staging's destination namespace without the parameter: refused too.
	got, err = d.Generate(ctx, app, ex, ex, pluginName, Env(ex, production, "ARGOCD_APP_NAMESPACE=checkout-staging"), nil)
	if err == nil || len(got) != 0 || !strings.Contains(err.Error(), `namespace "checkout-staging" is not one of environment production's`) {
		t.Errorf("staging's namespace: %d manifests, err %v; want a refusal naming it", len(got), err)
	}
	own := Env(ex, production, "ARGOCD_APP_NAME=checkout-production",
		`ARGOCD_APP_PARAMETERS=[{"name":"environment","string":"production"}]`, "PARAM_ENVIRONMENT=production")
	got, err = d.Generate(ctx, app, ex, ex, pluginName, own, nil)
	Must(t, err)
	checkAccepted(t, got, ex, production, map[string]string{"environment": "production"})
}

// wrapperStats picks /usr/bin/time -v's peak RSS and wall clock out of an
// error's stderr (a WrapperEnv measurement run); "" otherwise.
func wrapperStats(msg string) string {
	var out []string
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`Maximum resident set size \(kbytes\): (\d+)`),
		regexp.MustCompile(`Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)`),
	} {
		if m := re.FindStringSubmatch(msg); m != nil {
			out = append(out, m[0])
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; plugin process: " + strings.Join(out, "; ")
}
