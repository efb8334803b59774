//go:build e2e

package install

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/internal/ociimage"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/promotion"
)

// imageBinary writes the throughline binary of this machine's platform
// from the image index `make image` built, and returns its path.
func imageBinary(t *testing.T, idx v1.ImageIndex) string {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range im.Manifests {
		if d.Platform == nil || d.Platform.OS != runtime.GOOS || d.Platform.Architecture != runtime.GOARCH {
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatalf("image %s: %v", d.Digest, err)
		}
		files, err := extract(img, ociimage.BinaryPath)
		if err != nil {
			t.Fatalf("extract %s from %s: %v", ociimage.BinaryPath, d.Digest, err)
		}
		bin := filepath.Join(t.TempDir(), "throughline")
		if err := os.WriteFile(bin, files[ociimage.BinaryPath], 0o755); err != nil {
			t.Fatal(err)
		}
		return bin
	}
	t.Fatalf("the image index has no %s/%s image", runtime.GOOS, runtime.GOARCH)
	return ""
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestNotifierFromImage (issue 22, item 3): `throughline serve` from the
// release image, with no git on PATH (the image has none), clones the
// GitOps repository in process from the harness's Git server with a token
// read from a file, verifies the Acceptance of a Deployment rolled out by
// the real kube-controller-manager (the kubelet is played:
// testenv.StartKubelet), and its notifier commits the ACCEPTED evidence
// to the Git server. The Argo CD Application's status is written by the
// test (the application controller is played; e2e/argocdcontrol runs the
// real one against the same in-process clone).
func TestNotifierFromImage(t *testing.T) {
	root := testenv.RepoRoot(t)
	idx, _, _ := builtImage(t, root)
	bin := imageBinary(t, idx)
	testenv.RequireControllerManager(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{CRDPaths: []string{
		filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml"), testenv.ArgoCDCRDs(t)}})
	testenv.StartControllerManager(ctx, t, api)
	c := api.Client
	const ns, app = "shop", "checkout"
	for _, n := range []string{ns, "argocd"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.StartKubelet(ctx, t, c, testenv.KubeletOptions{Namespaces: []string{ns}})
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	index := testenv.MultiArchIndex(t)
	image := reg.Host + "/shop/checkout:1.0.0@" + index.Digest
	index.Push(ctx, t, reg.Host+"/shop/checkout:1.0.0")

	// The GitOps repository: production's overlay and a RECONCILING record.
	const token = "gh0-notifier-t0ken"
	gs := testenv.StartGitServer(t, testenv.GitServerOptions{Username: "x-access-token", Password: token})
	withCreds, err := gs.CreateRepo(ctx, "org/gitops.git")
	if err != nil {
		t.Fatal(err)
	}
	gitEnv := testenv.GitEnv(t.TempDir())
	seed := filepath.Join(t.TempDir(), "seed")
	testenv.Git(t, ctx, gitEnv, filepath.Dir(seed), "clone", "-q", withCreds, seed)
	desired := seedRecord(t, ctx, gitEnv, seed, app, image, index.Digest)

	// What the CMP renders and Argo CD applies: the Deployment and its Acceptance.
	replicas := int32(2)
	labels := map[string]string{"app": app}
	must(t, c.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}},
	}}))
	must(t, c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "throughline.dev/v1alpha1", "kind": "Acceptance",
		"metadata": map[string]any{"name": app, "namespace": ns, "labels": map[string]any{
			"app.kubernetes.io/managed-by": "throughline", "throughline.dev/app": app, "throughline.dev/environment": "production"}},
		"spec": map[string]any{"app": app, "environment": "production", "renderedHash": renderedHash, "objectCount": int64(2),
			"workloads": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": ns, "name": app,
				"containers": []any{map[string]any{"name": "app", "path": "spec.template.spec.containers[0]", "image": image, "digest": index.Digest}}}}},
	}}))
	src := map[string]any{"repoURL": gs.URL + "/org/gitops.git", "path": "apps/" + app + "/overlays/production", "targetRevision": "main"}
	dst := map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns}
	must(t, c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": app, "namespace": "argocd", "labels": map[string]any{"throughline.dev/environment": "production"}},
		"spec":     map[string]any{"project": "default", "source": src, "destination": dst},
	}}))
	if _, _, err := testenv.WaitRolledOut(ctx, c, ns, app, 2*time.Minute); err != nil {
		t.Fatalf("rollout of %s: %v", app, err)
	}
	playSynced(t, ctx, c, app, desired, src, dst)

	key := sshkey.NewNotifier(t, "production")
	serve, logs, metrics := startImageServe(t, ctx, api, bin, gs.URL+"/org/gitops.git", token, key)
	ev := waitEvidence(t, ctx, gitEnv, withCreds, app, desired, key)
	pods := 0
	for _, p := range ev.Pods {
		pods += p.Pods
		if !strings.HasSuffix(p.ImageID, "@"+index.Digest) {
			t.Fatalf("evidence: Pod %s runs %s, want %s", p.Pod, p.ImageID, index.Digest)
		}
	}
	if ev.Decision != promotion.Accepted || pods != 2 || ev.Acceptance != ns+"/"+app || ev.ArtifactDigest != index.Digest {
		t.Fatalf("evidence: decision %s (%s), %d Pods, Acceptance %s, digest %s", ev.Decision, ev.Reason, pods, ev.Acceptance, ev.ArtifactDigest)
	}
	// Issue 40: the acceptance is a deployment on /metrics, under the
	// documented names (docs/delivery-metrics.md), read from the
	// notifier's in-process clone.
	waitDeliveryMetrics(t, ctx, metrics, root, fmt.Sprintf(`throughline_dora_deployments_total{app=%q,environment="production"} 1`, app))
	cancel()
	_ = serve.Wait()
	if strings.Contains(logs.String(), token) {
		t.Fatal("serve's log prints the Git token")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

const renderedHash = "sha256:1111111111111111111111111111111111111111111111111111111111111111"

// seedRecord commits production's overlay, then the RECONCILING record of
// app whose desired revision is that commit, pushes both and returns the
// desired commit.
func seedRecord(t *testing.T, ctx context.Context, gitEnv []string, seed, app, image, digest string) string {
	t.Helper()
	overlay := filepath.Join(seed, "apps", app, "overlays", "production")
	must(t, os.MkdirAll(overlay, 0o755))
	must(t, os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte("images: [{name: checkout, digest: \""+digest+"\"}]\n"), 0o644))
	testenv.Git(t, ctx, gitEnv, seed, "add", ".")
	testenv.Git(t, ctx, gitEnv, seed, "commit", "-q", "-m", "promote "+app)
	desired := testenv.Git(t, ctx, gitEnv, seed, "rev-parse", "HEAD")
	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	tg := promotion.Target{Environment: "production", Path: "apps/" + app + "/overlays/production", Cluster: "prod",
		RenderedHash: renderedHash, BaseRenderedHash: renderedHash, Renderer: "v0.1.0"}
	rec, err := promotion.NewCandidate(app, 1, promotion.Artifact{Image: image, Digest: digest, SourceCommit: strings.Repeat("c", 40)}, tg, t0, "ci")
	must(t, err)
	must(t, rec.Verify(promotion.VerifiedIn{Environment: "staging", DesiredRevision: strings.Repeat("d", 40),
		ObservedRevision: strings.Repeat("d", 40), RenderedHash: renderedHash, RuntimeEvidence: "evidence/staging/x.json"}, t0, "notifier"))
	must(t, rec.Approve("alice", rec.InputFor("v0.1.0"), t0.Add(24*time.Hour), t0))
	must(t, rec.Reconcile(desired, t0, "ci"))
	y, err := rec.Marshal()
	must(t, err)
	p := filepath.Join(seed, promotion.RecordPath(app, "production"))
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, y, 0o644))
	testenv.Git(t, ctx, gitEnv, seed, "add", ".")
	testenv.Git(t, ctx, gitEnv, seed, "commit", "-q", "-m", "promotion: RECONCILING")
	testenv.Git(t, ctx, gitEnv, seed, "push", "-q", "origin", "main")
	return desired
}

// playSynced writes what argocd-application-controller reports once it
// synced rev and the app is Healthy.
func playSynced(t *testing.T, ctx context.Context, c client.Client, app, rev string, src, dst map[string]any) {
	t.Helper()
	ts := time.Now().UTC().Format(time.RFC3339)
	patch, err := json.Marshal(map[string]any{"status": map[string]any{
		"sync":   map[string]any{"status": "Synced", "revision": rev, "comparedTo": map[string]any{"source": src, "destination": dst}},
		"health": map[string]any{"status": "Healthy"}, "reconciledAt": ts,
		"operationState": map[string]any{"operation": map[string]any{"sync": map[string]any{"revision": rev}},
			"phase": "Succeeded", "startedAt": ts, "finishedAt": ts, "syncResult": map[string]any{"revision": rev, "source": src}},
	}})
	must(t, err)
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("argoproj.io/v1alpha1")
	obj.SetKind("Application")
	obj.SetNamespace("argocd")
	obj.SetName(app)
	must(t, c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)))
}

// startImageServe runs the image's binary as deploy/serve does, with the
// notifier on, an empty PATH and HOME, and the secrets in files.
func startImageServe(t *testing.T, ctx context.Context, api *testenv.APIServer, bin, gitURL, token string,
	key sshkey.Notifier) (cmd *exec.Cmd, logs *bytes.Buffer, metricsAddr string) {
	t.Helper()
	kubeconfig, err := api.Kubeconfig("throughline-serve", "")
	must(t, err)
	secrets := t.TempDir()
	tokenFile, argoFile, keyFile := filepath.Join(secrets, "token"), filepath.Join(secrets, "argocd-token"), filepath.Join(secrets, "evidence-key")
	must(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	must(t, os.WriteFile(argoFile, []byte("argocd-webhook-t0ken\n"), 0o600))
	must(t, os.WriteFile(keyFile, key.PrivatePEM(t), 0o600))
	metricsAddr = freeAddr(t)
	cmd = exec.CommandContext(ctx, bin, "serve", "--leader-elect=false", "--log-format=json",
		"--health-probe-bind-address", freeAddr(t), "--metrics-bind-address", metricsAddr, "--delivery-metrics-interval", "1s",
		"--registry-cache-dir", filepath.Join(t.TempDir(), "registry"), "--pending-requeue", "1s",
		"--notifier-bind-address", freeAddr(t), "--notifier-repo", filepath.Join(t.TempDir(), "gitops"),
		"--notifier-git-url", gitURL, "--notifier-git-username", "x-access-token", "--notifier-git-token-file", tokenFile,
		"--notifier-argocd-token-file", argoFile, "--notifier-resync-interval", "2s", "--notifier-evidence-key-file", keyFile)
	empty := t.TempDir()
	cmd.Env = []string{"PATH=" + empty, "HOME=" + empty, "KUBECONFIG=" + kubeconfig}
	logs = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	must(t, cmd.Start())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve (from the image) log:\n%s", logs.String())
		}
	})
	return cmd, logs, metricsAddr
}

// waitDeliveryMetrics waits until serve's /metrics at addr holds the
// sample want, then checks that the delivery and DORA metric families it
// exports are exactly those docs/delivery-metrics.md's table lists.
func waitDeliveryMetrics(t *testing.T, ctx context.Context, addr, root, want string) {
	t.Helper()
	var body string
	for !strings.Contains(body, want) {
		select {
		case <-ctx.Done():
			t.Fatalf("no %s on /metrics: %v\n%s", want, ctx.Err(), body)
		case <-time.After(time.Second):
		}
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue // not listening yet
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		_ = resp.Body.Close()
		must(t, err)
		body = string(b)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "delivery-metrics.md"))
	must(t, err)
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(throughline_[a-z_]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	exported := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (throughline_(?:delivery|dora)_[a-z_]+) `).FindAllStringSubmatch(body, -1) {
		exported[m[1]] = true
		if !documented[m[1]] {
			t.Errorf("/metrics exports %s, which docs/delivery-metrics.md does not list", m[1])
		}
	}
	for name := range documented {
		if !exported[name] {
			t.Errorf("docs/delivery-metrics.md lists %s, which /metrics does not export", name)
		}
	}
}

// waitEvidence waits until main on the Git server holds app's record
// decided and returns its evidence, signed by key (the notifier's).
func waitEvidence(t *testing.T, ctx context.Context, gitEnv []string, remote, app, desired string, key sshkey.Notifier) *evidence.Record {
	t.Helper()
	clone := filepath.Join(t.TempDir(), "check")
	testenv.Git(t, ctx, gitEnv, filepath.Dir(clone), "clone", "-q", remote, clone)
	for {
		testenv.Git(t, ctx, gitEnv, clone, "fetch", "-q", "origin")
		raw := testenv.Git(t, ctx, gitEnv, clone, "show", "origin/main:"+promotion.RecordPath(app, "production"))
		rec, err := promotion.Parse("record", []byte(raw))
		must(t, err)
		if rec.State != promotion.Reconciling {
			evPath := evidence.Path("production", app, rec.PromotionID)
			keys, err := evidence.ParseKeys("evidence-signers", []byte(key.Line()))
			must(t, err)
			// The bytes as committed (testenv.Git trims its output).
			show := func(file string) []byte {
				out, err := exec.CommandContext(ctx, "git", "-C", clone, "show", "origin/main:"+file).Output()
				must(t, err)
				return out
			}
			ev, err := evidence.Open(evPath, "production", show(evPath), show(evidence.SignaturePath(evPath)), keys)
			must(t, err)
			if ev.ObservedRevision != desired {
				t.Fatalf("evidence observes %s, want the desired %s", ev.ObservedRevision, desired)
			}
			author := testenv.Git(t, ctx, gitEnv, clone, "log", "-1", "--format=%an", "origin/main")
			t.Logf("evidence commit by %q: %s", author, testenv.Git(t, ctx, gitEnv, clone, "log", "-1", "--format=%s", "origin/main"))
			return ev
		}
		select {
		case <-ctx.Done():
			t.Fatal(fmt.Errorf("no evidence on main: %w", ctx.Err()))
		case <-time.After(time.Second):
		}
	}
}
