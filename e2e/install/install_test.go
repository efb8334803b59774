//go:build e2e

package install

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/internal/ociimage"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/registry"
	"github.com/throughline-dev/throughline/render"
)

// throughline is the CLI built once by TestMain.
var throughline string

func TestMain(m *testing.M) { testenv.MainWithThroughline(m, &throughline) }

const (
	namespace    = "throughline-system"
	fieldManager = "throughline-e2e"
)

// builtImage opens the OCI layout of `make image` at the repository root
// and returns its image index, the digest recorded in bin/image.ref (which
// must be the layout's) and the version the index is labelled with.
func builtImage(t *testing.T, root string) (v1.ImageIndex, string, string) {
	t.Helper()
	dir := filepath.Join(root, "bin", "image")
	refData, refErr := os.ReadFile(filepath.Join(root, "bin", "image.ref"))
	_, dirErr := os.Stat(filepath.Join(dir, "index.json"))
	if refErr != nil || dirErr != nil {
		msg := fmt.Sprintf("no image built at %s (bin/image, bin/image.ref): run `make image` first", root)
		if testenv.InCI() {
			t.Fatalf("CI=true and %s", msg)
		}
		t.Skip(msg)
	}
	ref := strings.TrimSpace(string(refData))
	_, digest, ok := strings.Cut(ref, "@")
	if !ok {
		t.Fatalf("bin/image.ref: %q is not a reference by digest", ref)
	}
	lp, err := layout.FromPath(dir)
	if err != nil {
		t.Fatalf("OCI layout %s: %v", dir, err)
	}
	outer, err := lp.ImageIndex()
	if err != nil {
		t.Fatalf("OCI layout %s: %v", dir, err)
	}
	om, err := outer.IndexManifest()
	if err != nil {
		t.Fatalf("OCI layout %s: index.json: %v", dir, err)
	}
	if len(om.Manifests) != 1 {
		t.Fatalf("OCI layout %s: index.json lists %d manifests, want the one image index", dir, len(om.Manifests))
	}
	if got := om.Manifests[0].Digest.String(); got != digest {
		t.Fatalf("OCI layout %s holds %s, but bin/image.ref says %s: run `make image` again", dir, got, digest)
	}
	idx, err := outer.ImageIndex(om.Manifests[0].Digest)
	if err != nil {
		t.Fatalf("OCI layout %s: image index %s: %v", dir, digest, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatalf("image index %s: %v", digest, err)
	}
	version := m.Annotations[ociimage.LabelVersion]
	if version == "" {
		t.Fatalf("image index %s has no %s annotation", digest, ociimage.LabelVersion)
	}
	return idx, digest, version
}

// writeDockerConfig writes a Docker config.json with the registry's
// credentials and returns its directory (for DOCKER_CONFIG).
func writeDockerConfig(t *testing.T, reg *testenv.Registry) string {
	t.Helper()
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(reg.Username + ":" + reg.Password))
	data, err := json.Marshal(map[string]any{"auths": map[string]any{reg.Host: map[string]string{"auth": auth}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestInstall: push, resolve, inspect, release-pin, render and apply the
// release built by `make image`.
func TestInstall(t *testing.T) {
	root := testenv.RepoRoot(t)
	idx, digest, version := builtImage(t, root)
	promCRDs := testenv.PrometheusCRDs(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()

	reg := testenv.StartRegistry(t, testenv.RegistryOptions{Username: "release", Password: "release-secret"})
	noCreds := append(testenv.GitEnv(t.TempDir()), "DOCKER_CONFIG="+t.TempDir(), "THROUGHLINE_CACHE_DIR="+t.TempDir())
	env := append(testenv.GitEnv(t.TempDir()), "DOCKER_CONFIG="+writeDockerConfig(t, reg), "THROUGHLINE_CACHE_DIR="+t.TempDir())
	repo := reg.Host + "/throughline-dev/throughline"
	tagRef := repo + ":" + version
	pinned := tagRef + "@" + digest

	// Push the index as built, with go-containerregistry and basic auth.
	t0 := time.Now()
	tag, err := name.NewTag(tagRef, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	basic := remote.WithAuth(&authn.Basic{Username: reg.Username, Password: reg.Password})
	if err := remote.WriteIndex(tag, idx, basic, remote.WithContext(ctx)); err != nil {
		t.Fatalf("push %s: %v", tagRef, err)
	}
	t.Logf("pushed %s (%s) in %s", tagRef, digest, time.Since(t0).Round(time.Millisecond))

	// throughline resolve: refused without credentials (the registry's auth
	// is real), exactly bin/image.ref's digest with DOCKER_CONFIG.
	if r := run(t, ctx, noCreds, "resolve", tagRef); r.Code == 0 {
		t.Fatalf("resolve %s without credentials succeeded: %s", tagRef, r.Stdout)
	}
	r := run(t, ctx, env, "resolve", "-o", "json", tagRef)
	if r.Code != 0 {
		t.Fatalf("resolve %s: exit %d\n%s", tagRef, r.Code, r.Stderr)
	}
	var descs []registry.Descriptor
	if err := json.Unmarshal([]byte(r.Stdout), &descs); err != nil || len(descs) != 1 {
		t.Fatalf("resolve -o json: %v\n%s", err, r.Stdout)
	}
	if descs[0].Digest != digest {
		t.Fatalf("the registry resolves %s to %s, bin/image.ref says %s", tagRef, descs[0].Digest, digest)
	}
	var platforms []string
	children := map[string]string{}
	for _, c := range descs[0].Children {
		p := c.Platform.OS + "/" + c.Platform.Architecture
		platforms = append(platforms, p)
		children[p] = c.Digest
	}
	slices.Sort(platforms)
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Fatalf("index %s has children %v, want linux/amd64 and linux/arm64", digest, platforms)
	}
	t.Logf("resolve %s: %s, children %v", tagRef, descs[0].Digest, platforms)

	checkImageContents(t, ctx, root, repo, children, version, basic)
	deploy := release(t, ctx, root, env, repo, tagRef, digest, version)
	objs := renderBundles(t, ctx, env, root, deploy, pinned)
	applyToAPIServer(t, ctx, deploy, promCRDs, objs, pinned)
}

// checkImageContents pulls the image of this machine's architecture from the
// registry, extracts its files, runs the binary and checks the config.
func checkImageContents(t *testing.T, ctx context.Context, root, repo string, children map[string]string, version string, auth remote.Option) {
	t.Helper()
	arch := runtime.GOARCH
	child, ok := children["linux/"+arch]
	if !ok || runtime.GOOS != "linux" {
		t.Fatalf("the index has no image for this machine (%s/%s) to run", runtime.GOOS, arch)
	}
	ref, err := name.NewDigest(repo+"@"+child, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref, auth, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatalf("config of %s: %v", ref, err)
	}
	if u := cf.Config.User; u != "999" && !strings.HasPrefix(u, "999:") {
		t.Errorf("image %s runs as user %q, want 999", ref, u)
	}
	if got := cf.Config.Labels[ociimage.LabelVersion]; got != version {
		t.Errorf("image %s: label %s = %q, want %q", ref, ociimage.LabelVersion, got, version)
	}
	files, err := extract(img, ociimage.BinaryPath, ociimage.PluginBinaryPath, ociimage.RenderBinaryPath, ociimage.PluginPath)
	if err != nil {
		t.Fatalf("extract %s: %v", ref, err)
	}
	plugin, err := os.ReadFile(filepath.Join(root, "plugin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(files[ociimage.PluginPath], plugin) {
		t.Errorf("%s in %s differs from the repository's plugin.yaml", ociimage.PluginPath, ref)
	}
	for _, p := range []string{ociimage.BinaryPath, ociimage.PluginBinaryPath, ociimage.RenderBinaryPath} {
		bin := filepath.Join(t.TempDir(), path.Base(p))
		if err := os.WriteFile(bin, files[p], 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(ctx, bin, "version").Output()
		if err != nil {
			t.Fatalf("%s version (from %s): %v", p, ref, err)
		}
		if got := strings.TrimSpace(string(out)); got != version {
			t.Fatalf("%s version (from %s) prints %q, want the stamped %q", p, ref, got, version)
		}
	}
	t.Logf("image %s (linux/%s): user %s, %s, %s and %s version %s, plugin.yaml as in the repository", child, arch, cf.Config.User,
		ociimage.BinaryPath, ociimage.PluginBinaryPath, ociimage.RenderBinaryPath, version)
}

// extract reads the named files from the flattened filesystem of img.
func extract(img v1.Image, paths ...string) (map[string][]byte, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		p := path.Clean("/" + h.Name)
		if h.Typeflag != tar.TypeReg || !slices.Contains(paths, p) {
			continue
		}
		if files[p], err = io.ReadAll(tr); err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
	}
	for _, p := range paths {
		if _, ok := files[p]; !ok {
			return nil, fmt.Errorf("no regular file %s in the image", p)
		}
	}
	return files, nil
}

// release runs hack/release.sh with IMAGE_REPO on a copy of deploy/: it
// refuses a bin/image.ref whose digest is not the registry's, and pins the
// bundles to the pushed reference. It returns the pinned copy.
func release(t *testing.T, ctx context.Context, root string, env []string, repo, tagRef, digest, version string) string {
	t.Helper()
	releaseSh := func(deploy, ref string) (string, error) {
		refFile := filepath.Join(t.TempDir(), "image.ref")
		if err := os.WriteFile(refFile, []byte(ref+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "release.sh"), throughline, refFile, version, deploy)
		cmd.Dir, cmd.Env = root, append(env, "IMAGE_REPO="+tagRef)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	copyDeploy := func() string {
		dir := filepath.Join(t.TempDir(), "deploy")
		if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "deploy"))); err != nil {
			t.Fatal(err)
		}
		return dir
	}

	// A digest the registry does not have under the tag: refused, nothing pinned.
	wrong := copyDeploy()
	other := "sha256:" + strings.Repeat("0", 64)
	if out, err := releaseSh(wrong, repo+"@"+other); err == nil || !strings.Contains(out, "refused") || !strings.Contains(out, digest) {
		t.Fatalf("release with a digest that is not the registry's: err %v\n%s", err, out)
	}
	if out, err := exec.CommandContext(ctx, "diff", "-r", filepath.Join(root, "deploy"), wrong).CombinedOutput(); err != nil {
		t.Fatalf("a refused release changed deploy/:\n%s", out)
	}

	deploy := copyDeploy()
	t0 := time.Now()
	out, err := releaseSh(deploy, repo+"@"+digest)
	if err != nil {
		t.Fatalf("hack/release.sh with IMAGE_REPO=%s: %v\n%s", tagRef, err, out)
	}
	for _, w := range []string{
		"resolved " + tagRef + ": " + digest,
		"serve/kustomization.yaml: images[0] ghcr.io/throughline-dev/throughline: newTag",
		"argocd/kustomization.yaml: images[0] ghcr.io/throughline-dev/throughline: newName \"" + repo + "\" added",
		"deploy/argocd (on a stand-in argocd-repo-server): passes policy",
		"components: [servicemonitor]: passes policy",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("release output lacks %q:\n%s", w, out)
		}
	}
	t.Logf("hack/release.sh (IMAGE_REPO=%s) in %s:\n%s", tagRef, time.Since(t0).Round(time.Millisecond), out)
	return deploy
}

// argoCDImage is the repository of hack/argocd-stand-in's containers (the
// stand-in Argo CD install the argocd Component is rendered on).
const argoCDImage = "quay.io/argoproj/argocd:"

// renderBundles renders every bundle of the pinned deploy/ copy with
// `throughline render` (the project's policy) and returns the objects to
// apply: deploy/crds, deploy/serve with the servicemonitor Component (the
// serve objects plus the metrics Service and the ServiceMonitor).
func renderBundles(t *testing.T, ctx context.Context, env []string, root, deploy, pinned string) map[string][]*unstructured.Unstructured {
	t.Helper()
	rendered := map[string][]*unstructured.Unstructured{}
	renderDir := func(base, dir string) []*unstructured.Unstructured {
		r := run(t, ctx, env, "render", "-o", "json", "--namespace", namespace, "--root", base, dir)
		if r.Code != 0 {
			t.Fatalf("throughline render %s: exit %d\n%s", dir, r.Code, r.Stderr)
		}
		var list struct{ Items []map[string]any }
		if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
			t.Fatalf("throughline render -o json %s: %v", dir, err)
		}
		var objs []*unstructured.Unstructured
		for _, it := range list.Items {
			objs = append(objs, &unstructured.Unstructured{Object: it})
		}
		return objs
	}
	for _, b := range []string{"crds", "flux", "serve"} {
		rendered[b] = renderDir(deploy, filepath.Join(deploy, b))
	}
	monitored := filepath.Join(filepath.Dir(deploy), "monitored")
	if err := os.MkdirAll(monitored, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(monitored, "kustomization.yaml"), []byte("resources: [../deploy/serve]\ncomponents: [../deploy/serve/servicemonitor]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rendered["monitored"] = renderDir(filepath.Dir(deploy), monitored)
	// The web view for the Argo CD extension: the notifier and ui Components.
	viewed := filepath.Join(filepath.Dir(deploy), "viewed")
	if err := os.MkdirAll(viewed, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(viewed, "kustomization.yaml"),
		[]byte("resources: [../deploy/serve]\ncomponents: [../deploy/serve/notifier, ../deploy/serve/ui]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rendered["viewed"] = renderDir(filepath.Dir(deploy), viewed)
	// deploy/argocd is a Component: render it on a stand-in Argo CD install
	// (hack/argocd-stand-in: argocd-repo-server and argocd-cm).
	argocd := filepath.Join(filepath.Dir(deploy), "argocd-install")
	if err := os.MkdirAll(argocd, 0o755); err != nil {
		t.Fatal(err)
	}
	standIn, err := os.ReadFile(filepath.Join(root, "hack", "argocd-stand-in", "repo-server.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	server, err := os.ReadFile(filepath.Join(root, "hack", "argocd-stand-in", "server.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"kustomization.yaml": "namespace: argocd\nresources: [repo-server.yaml, server.yaml]\ncomponents: [../deploy/argocd, ../deploy/argocd/extension]\n",
		"repo-server.yaml":   string(standIn),
		"server.yaml":        string(server),
	} {
		if err := os.WriteFile(filepath.Join(argocd, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rendered["argocd"] = renderDir(filepath.Dir(deploy), argocd)

	// Every throughline image is the pushed reference.
	for b, objs := range rendered {
		n := 0
		for _, o := range objs {
			if o.GetKind() == "Acceptance" {
				continue
			}
			for _, c := range render.Containers(render.Object{Map: o.Object}) {
				if c.ImageField != render.ImageString || strings.HasPrefix(c.Image, argoCDImage) {
					continue // string images only; not the stand-in's own containers
				}
				n++
				if c.Image != pinned {
					t.Errorf("deploy/%s renders image %s in %s %s, want %s", b, c.Image, o.GetKind(), o.GetName(), pinned)
				}
			}
		}
		if want := b == "serve" || b == "monitored" || b == "viewed" || b == "argocd"; want != (n > 0) {
			t.Errorf("deploy/%s renders %d container image(s)", b, n)
		}
	}
	return rendered
}

// warnings collects the API server's warning headers.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

// applyToAPIServer applies the rendered objects server-side with dry run to
// a real kube-apiserver (the ServiceMonitor CRD installed): every one is
// accepted without a warning, a Pod of the serve Deployment's template is
// admitted under the namespace's enforced restricted Pod Security, and
// broken objects are refused, so the dry run is a real check.
func applyToAPIServer(t *testing.T, ctx context.Context, deploy, promCRDs string, rendered map[string][]*unstructured.Unstructured, pinned string) {
	t.Helper()
	t0 := time.Now()
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{CRDPaths: []string{promCRDs, testenv.NotificationControllerCRDs(t)}})
	cfg := rest.CopyConfig(api.Config)
	warn := &warnings{}
	cfg.WarningHandler = warn
	c, err := client.New(cfg, client.Options{Scheme: api.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	apply := func(u *unstructured.Unstructured, dryRun bool) error {
		opts := []client.ApplyOption{client.FieldOwner(fieldManager), client.ForceOwnership}
		if dryRun {
			opts = append(opts, client.DryRunAll)
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), opts...); err != nil {
			return fmt.Errorf("apply %s %s/%s (dry run %t): %w", u.GetKind(), u.GetNamespace(), u.GetName(), dryRun, err)
		}
		return nil
	}
	find := func(bundle, kind, name string) *unstructured.Unstructured {
		for _, o := range rendered[bundle] {
			if o.GetKind() == kind && o.GetName() == name {
				return o
			}
		}
		t.Fatalf("deploy/%s renders no %s %s", bundle, kind, name)
		return nil
	}

	// deploy/crds: accepted in a dry run; then installed for real (from the
	// same file) so that the Acceptance objects of the render can be checked.
	for _, o := range rendered["crds"] {
		if o.GetKind() == "Acceptance" {
			continue
		}
		if err := apply(o, true); err != nil {
			t.Fatalf("deploy/crds: %v", err)
		}
	}
	if err := api.InstallCRDs(ctx, filepath.Join(deploy, "crds", "throughline.dev_acceptances.yaml")); err != nil {
		t.Fatal(err)
	}
	// The Namespace for real: a dry-run Namespace does not exist for the
	// namespaced objects. The ServiceAccount too, for the Pod check below.
	for _, o := range []*unstructured.Unstructured{find("serve", "Namespace", namespace), find("serve", "ServiceAccount", "throughline-serve")} {
		if err := apply(o, false); err != nil {
			t.Fatalf("deploy/serve: %v", err)
		}
	}
	// Everything of deploy/serve, then deploy/serve with the servicemonitor
	// Component (its Deployment, NetworkPolicy, metrics Service and
	// ServiceMonitor), and with the notifier and ui Components (the web view
	// the Argo CD extension reads), dry run.
	n := 0
	for _, b := range []string{"serve", "monitored", "viewed"} {
		for _, o := range rendered[b] {
			if err := apply(o, true); err != nil {
				t.Fatalf("deploy/%s: %v", b, err)
			}
			n++
		}
	}
	find("monitored", "ServiceMonitor", "throughline-serve")
	find("viewed", "Service", "throughline-ui")

	// deploy/flux (Provider and Alert against notification-controller's
	// CRDs, the HMAC Secret, the ValidatingAdmissionPolicy and its binding)
	// and deploy/argocd on the stand-in install (the repo-server with the
	// sidecar, argocd-cm with the Lua health, the plugin ConfigMap), plus the
	// notifications ConfigMap and Secret users apply beside Argo CD: dry run,
	// in their namespaces (created for real).
	for _, ns := range []string{"flux-system", "argocd"} {
		nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
		if err := apply(nsObj, false); err != nil {
			t.Fatal(err)
		}
	}
	notifications := readObjects(t, filepath.Join(deploy, "argocd", "argocd-notifications-cm.yaml"), filepath.Join(deploy, "argocd", "argocd-notifications-secret.yaml"))
	for _, o := range notifications {
		o.SetNamespace("argocd")
	}
	for b, objs := range map[string][]*unstructured.Unstructured{"flux": rendered["flux"], "argocd": rendered["argocd"], "argocd (notifications)": notifications} {
		for _, o := range objs {
			if err := apply(o, true); err != nil {
				t.Fatalf("deploy/%s: %v", b, err)
			}
			n++
		}
	}
	repoServer := find("argocd", "Deployment", "argocd-repo-server")
	if c, _, _ := unstructured.NestedSlice(repoServer.Object, "spec", "template", "spec", "containers"); len(c) != 2 {
		t.Fatalf("argocd-repo-server renders %d containers, want the repo-server and the throughline sidecar", len(c))
	}
	find("flux", "ValidatingAdmissionPolicy", "throughline-pinned-images")
	argocdServer := find("argocd", "Deployment", "argocd-server")
	if v, _, _ := unstructured.NestedSlice(argocdServer.Object, "spec", "template", "spec", "volumes"); len(v) != 2 {
		t.Fatalf("argocd-server renders %d volumes, want its own and the extension's", len(v))
	}
	if w := warn.take(); len(w) > 0 {
		t.Fatalf("the API server warned about the rendered objects:\n%s", strings.Join(w, "\n"))
	}

	// The restricted profile is enforced on Pods (a Deployment only warns):
	// a Pod of the serve template is admitted, a privileged one refused.
	dep := find("serve", "Deployment", "throughline-serve")
	spec, _, err := unstructured.NestedMap(dep.Object, "spec", "template", "spec")
	if err != nil || spec == nil {
		t.Fatalf("Deployment throughline-serve: spec.template.spec: %v", err)
	}
	pod := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": name, "namespace": namespace},
			"spec":     spec,
		}}
	}
	if err := apply(pod("serve-template", spec), true); err != nil {
		t.Fatalf("a Pod of the serve Deployment's template is not admitted in %s (restricted Pod Security): %v", namespace, err)
	}
	privileged := map[string]any{"containers": []any{map[string]any{
		"name": "bad", "image": pinned, "securityContext": map[string]any{"privileged": true},
	}}}
	if err := apply(pod("privileged", privileged), true); !apierrors.IsForbidden(err) {
		t.Fatalf("a privileged Pod in %s: want Forbidden by Pod Security, got %v", namespace, err)
	}
	// A Deployment whose selector does not match its template is invalid.
	broken := dep.DeepCopy()
	broken.SetName("broken")
	if err := unstructured.SetNestedField(broken.Object, map[string]any{"app.kubernetes.io/name": "other"}, "spec", "selector", "matchLabels"); err != nil {
		t.Fatal(err)
	}
	if err := apply(broken, true); !apierrors.IsInvalid(err) {
		t.Fatalf("a Deployment with a selector that does not match its template: want Invalid, got %v", err)
	}
	// A ServiceMonitor that breaks the CRD's schema (interval pattern) is
	// refused: the ServiceMonitor CRD is really checked.
	sm := find("monitored", "ServiceMonitor", "throughline-serve").DeepCopy()
	sm.SetName("broken")
	if err := unstructured.SetNestedSlice(sm.Object, []any{map[string]any{"port": "metrics", "interval": "thirty seconds"}}, "spec", "endpoints"); err != nil {
		t.Fatal(err)
	}
	if err := apply(sm, true); !apierrors.IsInvalid(err) {
		t.Fatalf("a ServiceMonitor with interval \"thirty seconds\": want Invalid, got %v", err)
	}
	warn.take()
	t.Logf("kube-apiserver accepted %d rendered objects of deploy/crds, deploy/serve and its servicemonitor, notifier and ui Components, deploy/flux, deploy/argocd and deploy/argocd/extension on a stand-in Argo CD and its notifications (server-side apply, dry run, field manager %s) and refused 3 broken ones; %s", n+len(rendered["crds"])-1, fieldManager, time.Since(t0).Round(time.Millisecond))
}

// readObjects decodes the YAML documents of files.
func readObjects(t *testing.T, files ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := render.DecodeManifests(raw, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			out = append(out, &unstructured.Unstructured{Object: o.Map})
		}
	}
	return out
}

// run runs the throughline CLI.
func run(t *testing.T, ctx context.Context, env []string, args ...string) testenv.CLIResult {
	t.Helper()
	r, err := testenv.RunCLI(ctx, throughline, env, args...)
	if err != nil {
		t.Fatalf("throughline %s: %v", strings.Join(args, " "), err)
	}
	return r
}
