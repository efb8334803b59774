//go:build e2e

package fluxcontrol

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/notifier"
	"github.com/throughline-dev/throughline/promotion"
)

// installAlert creates the shipped Flux Secret, Provider (posting to url,
// signed with key) and an Alert forwarding Kustomization ks's events with
// environment env.
func installAlert(ctx context.Context, t *testing.T, c client.Client, root, url string, key []byte, ks, env string) {
	t.Helper()
	for _, f := range []string{"notifier-secret.yaml", "notifier-provider.yaml", "notifier-alert.yaml"} {
		objs := readYAML(t, filepath.Join(root, "deploy", "flux", f))
		if len(objs) != 1 {
			t.Fatalf("deploy/flux/%s: %d objects, want 1", f, len(objs))
		}
		u := objs[0]
		switch u.GetKind() {
		case "Secret":
			must(t, unstructured.SetNestedField(u.Object, string(key), "stringData", "token"))
		case "Provider":
			must(t, unstructured.SetNestedField(u.Object, url, "spec", "address"))
		case "Alert": // the shipped Alert names production: point it at ks in env
			u.SetName("throughline-" + ks)
			must(t, unstructured.SetNestedSlice(u.Object, []any{map[string]any{"kind": "Kustomization", "name": ks}}, "spec", "eventSources"))
			must(t, unstructured.SetNestedField(u.Object, env, "spec", "eventMetadata", "environment"))
		}
		must(t, c.Create(ctx, u))
	}
}

// pushFluxArtifact pushes files as flux push artifact does (one
// tar+gzip layer of Flux's content media type, Flux's config media type)
// with the revision and source annotations, and returns its manifest digest.
func pushFluxArtifact(t *testing.T, ref, revision string, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for n, s := range files {
		must(t, tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(s)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(s))
		must(t, err)
	}
	must(t, tw.Close())
	must(t, gz.Close())
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, "application/vnd.cncf.flux.config.v1+json")
	img, err := mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(buf.Bytes(), "application/vnd.cncf.flux.content.v1.tar+gzip")})
	must(t, err)
	img = mutate.Annotations(img, map[string]string{"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.source": "https://git.example/gitops-env.git"}).(v1.Image)
	r, err := name.ParseReference(ref, name.Insecure)
	must(t, err)
	must(t, remote.Write(r, img))
	d, err := img.Digest()
	must(t, err)
	return d.String()
}

// TestFluxOCIRepository: a real source-controller pulls an artifact pushed
// as flux push artifact does from a real registry (docker-registry), a real
// kustomize-controller applies it, and the real notification-controller
// forwards its event to the notifier. Arrows: the OCIRepository names the
// pushed digest as <tag>@sha256:<digest>; the Kustomization reports the
// artifact's revision annotation as its origin revision; the notifier
// reads the delivery as the desired OCI artifact (it waits for the
// Acceptance, which this test does not deploy), never as a Git commit.
func TestFluxOCIRepository(t *testing.T) {
	testenv.RequireFluxControllers(t)
	testenv.RequireNotificationController(t)
	root := testenv.RepoRoot(t)
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{
		CRDPaths: []string{filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml")},
	})
	nc := testenv.StartNotificationController(t, api)
	fc := testenv.StartFluxControllers(t, api, testenv.FluxControllersOptions{EventsURL: nc.EventsURL})
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	t.Logf("real components: kube-apiserver v%s, %s, notification-controller v%s, docker-registry",
		testenv.K8sVersion, fc.Versions, testenv.NotificationCtlVersion)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	c := api.Client
	namespace(ctx, t, c, fluxNS)
	namespace(ctx, t, c, appNS)

	// The GitOps repository: the merged commit, then staging's record
	// RECONCILING towards the artifact of that commit.
	base := t.TempDir()
	origin, seed := filepath.Join(base, "origin.git"), filepath.Join(base, "seed")
	env := []string{"HOME=" + base, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x"}
	testenv.Git(t, ctx, env, base, "init", "-q", "--bare", "-b", "main", origin)
	testenv.Git(t, ctx, env, base, "init", "-q", "-b", "main", seed)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: checkout-config\ndata:\n  color: blue\n"
	must(t, os.MkdirAll(filepath.Join(seed, overlay), 0o755))
	must(t, os.WriteFile(filepath.Join(seed, overlay, "configmap.yaml"), []byte(cm), 0o644))
	testenv.Git(t, ctx, env, seed, "add", ".")
	testenv.Git(t, ctx, env, seed, "commit", "-q", "-m", "checkout's staging overlay")
	merged := testenv.Git(t, ctx, env, seed, "rev-parse", "HEAD")
	repoRef := reg.Host + "/gitops/staging"
	// Arrow "merged commit -> artifact": CI pushes the overlay naming the commit.
	// It pushes the repository root (flux push artifact --path=.), so the
	// Kustomization's path is the overlay's path in the repository, which
	// the environment registry checks as for a Git source.
	digest := pushFluxArtifact(t, repoRef+":staging", "main@sha1:"+merged, map[string]string{overlay + "/configmap.yaml": cm})
	rec := ociStagingRecord(t, digest, merged)
	y, err := rec.Marshal()
	must(t, err)
	p := filepath.Join(seed, promotion.RecordPath("checkout", "staging"))
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, y, 0o644))
	testenv.Git(t, ctx, env, seed, "add", ".")
	testenv.Git(t, ctx, env, seed, "commit", "-q", "-m", "promotion: checkout RECONCILING in staging")
	testenv.Git(t, ctx, env, seed, "remote", "add", "origin", origin)
	testenv.Git(t, ctx, env, seed, "push", "-q", "origin", "main")
	work := filepath.Join(base, "work")
	testenv.Git(t, ctx, env, base, "clone", "-q", origin, work)
	repo, err := gitrepo.Open(ctx, work)
	must(t, err)
	repo.Env = env

	// The notifier, with a registry that says staging reads an OCI artifact.
	registry, err := environment.New(promotion.PolicyFile, &v1alpha1.PromotionPolicy{Environments: map[string]v1alpha1.EnvironmentPolicy{
		"staging": {Paths: []string{"apps/*/overlays/staging"}, Namespaces: []string{"*-staging"},
			Source: &v1alpha1.SourcePolicy{OCI: &v1alpha1.OCISourcePolicy{Repository: repoRef, Tag: "staging"}}}}})
	must(t, err)
	regFn := func(context.Context) (*environment.Registry, error) { return registry, nil }
	dyn, err := dynamic.NewForConfig(api.Config)
	must(t, err)
	got := &deliveries{}
	proc := &notifier.Processor{Git: &evidence.GitSink{Repo: repo, Branch: "main"}, Registry: regFn,
		Live: &notifier.KubeAcceptances{Client: dyn, Registry: regFn}}
	key := []byte("hmac-key-0123456789")
	h, err := notifier.New(notifier.Config{FluxKey: key, Rate: -1, Log: got.log}, proc, nil)
	must(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	installAlert(ctx, t, c, root, srv.URL+"/v1/flux", key, ksName, "staging")

	// The source and the Kustomization as a cluster would have them.
	must(t, c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": srcAPI, "kind": "OCIRepository",
		"metadata": map[string]any{"name": "gitops-staging", "namespace": fluxNS},
		"spec":     map[string]any{"interval": "1m", "url": "oci://" + repoRef, "ref": map[string]any{"tag": "staging"}, "insecure": true},
	}}))
	must(t, c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ksAPI, "kind": "Kustomization",
		"metadata": map[string]any{"name": ksName, "namespace": fluxNS},
		"spec": map[string]any{"interval": "1m", "path": "./" + overlay, "prune": true, "targetNamespace": appNS,
			"sourceRef": map[string]any{"kind": "OCIRepository", "name": "gitops-staging"}},
	}}))

	// Arrow "artifact -> source revision": <tag>@<the pushed digest>.
	want := "staging@" + digest
	eventually(ctx, t, 2*time.Minute, "OCIRepository artifact revision", func() string {
		u, why := get(ctx, c, srcAPI, "OCIRepository", fluxNS, "gitops-staging")
		if why != "" {
			return why
		}
		if rev, _, _ := unstructured.NestedString(u.Object, "status", "artifact", "revision"); rev != want {
			s, r, m := ready(u)
			return "artifact revision " + rev + ", want " + want + "; Ready " + s + " " + r + ": " + m
		}
		return ""
	})
	// Arrow "source revision -> applied revision and origin".
	eventually(ctx, t, 2*time.Minute, "Kustomization applied the artifact", func() string {
		u, why := get(ctx, c, ksAPI, "Kustomization", fluxNS, ksName)
		if why != "" {
			return why
		}
		rev, _, _ := unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
		orig, _, _ := unstructured.NestedString(u.Object, "status", "lastAppliedOriginRevision")
		if rev != want || orig != "main@sha1:"+merged {
			s, r, m := ready(u)
			return "lastAppliedRevision " + rev + " origin " + orig + ", want " + want + " origin main@sha1:" + merged +
				"; Ready " + s + " " + r + ": " + m
		}
		return ""
	})
	// Arrow "event -> notifier": read as the desired artifact, so the
	// notifier waits for the Acceptance (none is deployed here) instead of
	// halting a wrong source.
	eventually(ctx, t, 2*time.Minute, "the notifier read the OCI delivery", func() string {
		for _, d := range got.list() {
			if d.Err != nil && strings.Contains(d.Err.Error(), "no Acceptance object") {
				return ""
			}
		}
		return "deliveries: " + got.summary()
	})
	if r := readRecord(t, origin); r.State != promotion.Reconciling {
		t.Fatalf("arrow notifier record: %s, want still RECONCILING (nothing decided without an Acceptance): %s", r.State, r.Reason)
	}
}

// ociStagingRecord is checkout's staging record RECONCILING towards the
// artifact digest built from commit.
func ociStagingRecord(t *testing.T, digest, commit string) *promotion.Record {
	t.Helper()
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	img := "ghcr.io/throughline-dev/checkout:1.4.2@sha256:" + strings.Repeat("9", 64)
	hash := "sha256:" + strings.Repeat("1", 64)
	rec, err := promotion.NewCandidate("checkout", 1, promotion.Artifact{Image: img, Digest: "sha256:" + strings.Repeat("9", 64),
		SourceCommit: strings.Repeat("1", 40)}, promotion.Target{Environment: "staging", Path: overlay, Cluster: "staging",
		RenderedHash: hash, BaseRenderedHash: hash, Renderer: "e2e"}, t0, "test")
	must(t, err)
	must(t, rec.Verify(promotion.VerifiedIn{Environment: "dev", DesiredRevision: strings.Repeat("2", 40), ObservedRevision: strings.Repeat("2", 40),
		RenderedHash: hash, RuntimeEvidence: "evidence/dev/checkout/1.json"}, t0, "test"))
	must(t, rec.Approve("alice", rec.InputFor("e2e"), t0.Add(48*time.Hour), t0))
	must(t, rec.ReconcileOCI(digest, commit, t0, "test"))
	return rec
}

// readRecord reads checkout's staging record on origin's main.
func readRecord(t *testing.T, origin string) *promotion.Record {
	t.Helper()
	data := testenv.Git(t, t.Context(), nil, origin, "show", "main:"+promotion.RecordPath("checkout", "staging"))
	r, err := promotion.Parse("staging record", []byte(data))
	must(t, err)
	return r
}
