//go:build e2e

package fluxcontrol

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/promotion"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// namespace creates a namespace and, since no kube-controller-manager runs
// (its serviceaccounts controller makes them), its default ServiceAccount.
func namespace(ctx context.Context, t *testing.T, c client.Client, name string) {
	t.Helper()
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	// kube-controller-manager's serviceaccount controller may have made it already.
	must(t, client.IgnoreAlreadyExists(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "default"}})))
}

// readYAML reads the objects of a (multi-document) file of the repository.
func readYAML(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	must(t, err)
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// eventually polls check every 250 ms until it returns "" (done), failing the
// test with arrow (the link of the chain that broke) and check's last answer
// after d.
func eventually(ctx context.Context, t *testing.T, d time.Duration, arrow string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	last := ""
	for {
		if last = check(); last == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last: %s", arrow, d, last)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v; last: %s", arrow, ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// get reads an object of the given kind, "" when found, else why not.
func get(ctx context.Context, c client.Client, apiVersion, kind, ns, name string) (*unstructured.Unstructured, string) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("%s %s/%s not found", kind, ns, name)
		}
		return nil, fmt.Sprintf("reading %s %s/%s: %v", kind, ns, name, err)
	}
	return u, ""
}

// ready returns the Ready condition in status.conditions (Flux's and the
// Acceptance's alike).
func ready(u *unstructured.Unstructured) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return s, r, msg
		}
	}
	return "", "", ""
}

// kube plays the part of Kubernetes that cannot run in the harness: the
// kubelet (Pod status with the imageID of every container; no container
// runtime here). The API server, kube-controller-manager (Deployments,
// ReplicaSets, Pods), Flux and the verifier are real.
type kube struct {
	t    *testing.T
	ctx  context.Context
	c    client.Client
	node string
}

// rollout waits until the real deployment and replicaset controllers
// (kube-controller-manager) rolled out the current template of the live
// Deployment ns/name, while the PLAYED kubelet (testenv.StartKubelet: no
// container runtime here) binds its Pods to k.node and runs them with
// imageID (repo@digest) for every container; then the Deployment is
// Available. The kubelet runs only during rollout: before it, the
// controllers' Pods stay Pending. hash is unused: the deployment controller
// computes the pod-template-hash.
func (k *kube) rollout(ns, name, _ /* hash */, imageID string) {
	k.t.Helper()
	// The played kubelet reports the imageID a runtime would for the Pod's
	// own image (docker-pullable://repo@digest): it never makes a wrong
	// image look right.
	kubelet := testenv.StartKubelet(k.ctx, k.t, k.c, testenv.KubeletOptions{Namespaces: []string{ns}, Node: k.node})
	_, pods, err := testenv.WaitRolledOut(k.ctx, k.c, ns, name, 2*time.Minute)
	kubelet.Stop()
	if err != nil {
		k.t.Fatalf("arrow live Deployment -> Pods rolled out: %v", err)
	}
	for _, p := range pods {
		for _, s := range p.Status.ContainerStatuses {
			if strings.TrimPrefix(s.ImageID, "docker-pullable://") != imageID {
				k.t.Fatalf("arrow rollout -> Pods run %s: Pod %s container %s imageID %s", imageID, p.Name, s.Name, s.ImageID)
			}
		}
	}
}

// gitops is the GitOps repository on the harness's Git server and a clone
// of it where the test commits, as CI and reviewers would.
type gitops struct {
	t      *testing.T
	ctx    context.Context
	env    []string
	remote string
	dir    string
	// notifier is the key the notifier signs evidence with: the policy's
	// evidenceSigners lists it for every environment.
	notifier sshkey.Notifier
}

// newGitOps creates org/gitops-env.git on gs, seeded with examples/gitops-env
// (main), its policy naming the evidenceSigners file that lists g.notifier,
// and a working clone.
func newGitOps(ctx context.Context, t *testing.T, gs *testenv.GitServer, root string) *gitops {
	t.Helper()
	remote, err := gs.CreateRepo(ctx, "org/gitops-env.git")
	must(t, err)
	home := t.TempDir()
	g := &gitops{t: t, ctx: ctx, env: testenv.GitEnv(home), remote: remote, dir: filepath.Join(home, "gitops-env")}
	testenv.Git(t, ctx, g.env, home, "clone", "-q", remote, g.dir)
	must(t, os.CopyFS(g.dir, os.DirFS(filepath.Join(root, "examples", "gitops-env"))))
	testenv.RemoveRuntimeChecks(t, g.dir) // no app serves and no Prometheus runs here
	testenv.RemoveTrust(t, g.dir)         // made-up digests without evidence: e2e/supplychain's subject
	g.notifier = sshkey.NewNotifier(t, "dev", "staging", "production")
	must(t, os.MkdirAll(filepath.Join(g.dir, filepath.Dir(sshkey.EvidenceSignersFile)), 0o755))
	must(t, os.WriteFile(filepath.Join(g.dir, sshkey.EvidenceSignersFile), []byte(g.notifier.Line()), 0o644))
	pol, err := os.ReadFile(filepath.Join(g.dir, promotion.PolicyFile))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(g.dir, promotion.PolicyFile), append(pol, sshkey.PolicyLine...), 0o644))
	return g
}

func (g *gitops) git(args ...string) string {
	g.t.Helper()
	return testenv.Git(g.t, g.ctx, g.env, g.dir, args...)
}

// commit commits everything and returns the commit id.
func (g *gitops) commit(msg string) string {
	g.t.Helper()
	g.git("add", "-A")
	g.git("commit", "-q", "-m", msg)
	return g.git("rev-parse", "HEAD")
}

// replace replaces old (exactly once) by repl in a file of the clone.
func (g *gitops) replace(file, old, repl string) {
	g.t.Helper()
	path := filepath.Join(g.dir, file)
	b, err := os.ReadFile(path)
	must(g.t, err)
	if n := strings.Count(string(b), old); n != 1 {
		g.t.Fatalf("%s: %q occurs %d times, want 1", file, old, n)
	}
	must(g.t, os.WriteFile(path, []byte(strings.Replace(string(b), old, repl, 1)), 0o644))
}

// cli runs the throughline CLI in the clone.
func (g *gitops) cli(args ...string) testenv.CLIResult {
	g.t.Helper()
	res, err := testenv.RunCLI(g.ctx, throughline, g.env, append(args[:1:1], append([]string{"--root", g.dir}, args[1:]...)...)...)
	must(g.t, err)
	return res
}

// fluxRevision is the revision string Flux reports for a commit of main.
func fluxRevision(commit string) string { return "main@sha1:" + commit }

// exampleFile is examples/flux/clusters/<env>/checkout.yaml: checkout in
// env run by Flux, as the example ships it.
func exampleFile(root, env string) string {
	return filepath.Join(root, "examples", "flux", "clusters", env, "checkout.yaml")
}

// applyExample creates the objects of exampleFile(root, env) as the
// cluster's own Kustomization of clusters/<env>/ would: its Namespace
// (unless the test made it), the ServiceAccount kustomize-controller
// impersonates and its RoleBinding in the app's namespace only, and the
// Kustomization, which it returns. deploy/crds/acceptance-roles.yaml must
// be aggregated into admin first (aggregateAcceptances): the Kustomization
// applies as that ServiceAccount.
func applyExample(ctx context.Context, t *testing.T, c client.Client, root, env string) *unstructured.Unstructured {
	t.Helper()
	var ks *unstructured.Unstructured
	for _, u := range readYAML(t, exampleFile(root, env)) {
		if u.GetKind() == "Kustomization" {
			ks = u
			continue
		}
		must(t, client.IgnoreAlreadyExists(c.Create(ctx, u)))
	}
	if ks == nil {
		t.Fatalf("%s: no Kustomization", exampleFile(root, env))
	}
	if sa, _, _ := unstructured.NestedString(ks.Object, "spec", "serviceAccountName"); sa == "" {
		t.Fatalf("%s: the Kustomization applies as kustomize-controller itself (no serviceAccountName)", exampleFile(root, env))
	}
	must(t, c.Create(ctx, ks))
	return ks
}

// aggregateAcceptances applies deploy/crds/acceptance-roles.yaml and waits
// until the real clusterrole-aggregation controller has added Acceptances
// to the built-in admin role (what a tenant's ServiceAccount is bound to).
func aggregateAcceptances(ctx context.Context, t *testing.T, c client.Client, root string) {
	t.Helper()
	for _, u := range readYAML(t, filepath.Join(root, "deploy", "crds", "acceptance-roles.yaml")) {
		must(t, client.IgnoreAlreadyExists(c.Create(ctx, u)))
	}
	eventually(ctx, t, time.Minute, "arrow acceptance-roles.yaml -> admin aggregates Acceptances", func() string {
		var admin rbacv1.ClusterRole
		if err := c.Get(ctx, client.ObjectKey{Name: "admin"}, &admin); err != nil {
			return err.Error()
		}
		for _, r := range admin.Rules {
			if slices.Contains(r.APIGroups, "throughline.dev") && slices.Contains(r.Resources, "acceptances") && slices.Contains(r.Verbs, "patch") {
				return ""
			}
		}
		return fmt.Sprintf("ClusterRole admin: %d rules, none patches throughline.dev acceptances", len(admin.Rules))
	})
}
