package breakglass

// The write-back is tested here without a cluster: the live objects are
// recorded fixtures with managedFields as kube-apiserver writes them
// (FieldsV1 with f:, k:, v: and i: entries; managers kubectl-edit,
// kubectl-patch, argocd-controller, kustomize-controller and
// kube-controller-manager), handed to the write-back in place of the live
// reads (the cluster read itself, ReadLive, is exercised by the e2e suite
// against a real kube-apiserver). The repository is a real git repository.

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/render"
)

// planText is a write-back plan as the golden files hold it: the changes,
// then every file.
func planText(plan *WritebackPlan) string {
	var b strings.Builder
	b.WriteString("--- changes\n")
	for _, ch := range plan.Changes {
		b.WriteString(ch.String() + "\n")
	}
	var names []string
	for n := range plan.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b.WriteString("--- " + n + "\n" + string(plan.Files[n]))
	}
	b.WriteString("--- patches\n" + strings.Join(plan.Patches, "\n") + "\n")
	return b.String()
}

const overlayKustomization = `# Production overlay.
namespace: prod
resources:
  - ../../base   # the base
patches:
  - path: replicas.yaml
`

// TestPlanWriteback: the pure part of the write-back, live objects with
// recorded managedFields and the rendered desired states in, the classified
// changes and the overlay's files out.
func TestPlanWriteback(t *testing.T) {
	t.Parallel()
	web, build := render.Object{Map: fromJSON(t, desiredWeb)}, render.Object{Map: fromJSON(t, desiredPipeline)}
	live := map[render.ID]map[string]any{Key(web.ID()): fromJSON(t, liveWeb), Key(build.ID()): fromJSON(t, livePipeline)}
	for _, tc := range []struct {
		name          string
		kustomization string
		writers       []string
		code          int
	}{
		{name: "every-entry-kind", kustomization: overlayKustomization},
		{name: "no-patches-key", kustomization: "resources:\n- ../../base\n"},
		{name: "already-listed", kustomization: "resources:\n- ../../base\npatches:\n- path: breakglass-deployment-web.yaml\n"},
		// Every operator is a legitimate writer: nothing is written back,
		// and the kustomization is not even read.
		{name: "nothing-permanent", writers: []string{"kubectl-patch", "kubectl-edit"}},
		{name: "broken-kustomization", kustomization: "resources: [unclosed\n", code: exitcode.Invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmp := Compare{Before: []render.Object{web, build}, Proposed: []render.Object{web, build}, Live: live,
				ControllerManagers: DefaultControllerManagers,
				OtherWriters:       append(append([]string{"backup-operator"}, tc.writers...), DefaultOtherWriters...)}
			rec := &Record{Ticket: "INC-7", Operator: "alice"}
			read := false
			plan, err := PlanWriteback(cmp, rec, "apps/web/overlays/prod", func() (string, []byte, error) {
				read = true
				if tc.kustomization == "" {
					return "", nil, errors.New("read the kustomization with nothing to write")
				}
				return "apps/web/overlays/prod/kustomization.yaml", []byte(tc.kustomization), nil
			})
			if exitcode.Code(err) != tc.code {
				t.Fatalf("PlanWriteback: %v, want exit %d", err, tc.code)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "kustomization.yaml") {
					t.Errorf("the error does not name the kustomization: %v", err)
				}
				return
			}
			if tc.kustomization == "" && (read || len(plan.Files) != 0) {
				t.Fatalf("nothing permanent, yet files %v (kustomization read: %v)", plan.Files, read)
			}
			goldenText(t, "writeback/"+tc.name+".golden", planText(plan))
		})
	}
}

// gitopsRepo commits files into a new repository (branch main) and opens
// it; it returns the commit.
func gitopsRepo(t *testing.T, files map[string]string) (*gitops.Repo, string) {
	t.Helper()
	dir, seed := gittest.New(t, files)
	r, err := gitops.OpenLocal(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	// The repository's own commits (the write-back): gittest's HOME and
	// author as extra entries. Not gittest.Env, whose os.Environ would come
	// after the library's LC_ALL=C.
	r.Env = []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x"}
	return r, seed
}

const imageRef = "registry.example.test/web:1.0.0@sha256:4b7e2a91c3d5f6081726354a5b6c7d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8"

// The application as committed: a Deployment that passes every policy rule.
var webFiles = map[string]string{
	"apps/web/base/kustomization.yaml": "resources:\n  - deployment.yaml\n",
	"apps/web/base/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: ` + imageRef + "\n",
	"apps/web/overlays/production/kustomization.yaml": "# Production.\nnamespace: web-production\nresources:\n  - ../../base # the base\n",
}

// liveProduction is the Deployment live after the incident: Argo CD applied
// it, the HPA scaled it, an operator raised the memory limit with kubectl
// edit and added an environment variable with kubectl patch.
const liveProduction = `{"apiVersion":"apps/v1","kind":"Deployment",
 "metadata":{"name":"web","namespace":"web-production","resourceVersion":"77","generation":4,
  "annotations":{"deployment.kubernetes.io/revision":"4"},
  "managedFields":[
   {"manager":"argocd-controller","operation":"Apply","apiVersion":"apps/v1","fieldsType":"FieldsV1","fieldsV1":
    {"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},
     "f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{}}}}}}}},
   {"manager":"kube-controller-manager","operation":"Update","apiVersion":"apps/v1","subresource":"scale","fieldsType":"FieldsV1","fieldsV1":
    {"f:spec":{"f:replicas":{}}}},
   {"manager":"kubectl-edit","operation":"Update","apiVersion":"apps/v1","fieldsType":"FieldsV1","fieldsV1":
    {"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:resources":{"f:limits":{"f:memory":{}}}}}}}}}},
   {"manager":"kubectl-patch","operation":"Update","apiVersion":"apps/v1","fieldsType":"FieldsV1","fieldsV1":
    {"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:env":{".":{},
     "k:{\"name\":\"DEBUG\"}":{".":{},"f:name":{},"f:value":{}}}}}}}}}},
   {"manager":"kube-controller-manager","operation":"Update","apiVersion":"apps/v1","subresource":"status","fieldsType":"FieldsV1","fieldsV1":
    {"f:status":{"f:replicas":{}}}}
  ]},
 "spec":{"replicas":5,"selector":{"matchLabels":{"app":"web"}},"progressDeadlineSeconds":600,
  "template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"` + imageRef + `",
   "resources":{"limits":{"memory":"1Gi"}},"env":[{"name":"DEBUG","value":"1"}]}]}}},
 "status":{"replicas":5}}`

func pausedRecord(src string) *Record {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return &Record{SchemaVersion: SchemaVersion, App: "web", Environment: "production", Controller: Flux, State: Paused,
		Object:         Ref{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Namespace: "flux-system", Name: "web-production"},
		SourceRevision: "main@sha1:" + src, Operator: "alice", Ticket: "INC 42", PausedAt: now, ExpiresAt: now.Add(4 * time.Hour)}
}

// TestProposeWriteback: the write-back on a real repository, with the live
// state recorded: the patch and the kustomization are committed on the
// write-back branch on top of the base, the base does not move, and a
// second write-back does not move the branch.
func TestProposeWriteback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, src := gitopsRepo(t, webFiles)
	rec := pausedRecord(src)
	var readFor []render.ID
	liveState := func(_ context.Context, before []render.Object) (*Live, error) {
		for _, o := range before {
			readFor = append(readFor, o.ID())
		}
		dep := fromJSON(t, liveProduction)
		id := render.ID{Group: "apps", Kind: "Deployment", Namespace: "web-production", Name: "web"}
		return &Live{Objects: map[render.ID]map[string]any{id: dep}, Tracked: []render.ID{id}}, nil
	}
	opts := WritebackOptions{Base: src, Path: "apps/web/overlays/production", Renderer: "test",
		Compare: Compare{ControllerManagers: DefaultControllerManagers, OtherWriters: DefaultOtherWriters, Temporary: DefaultTemporary}}
	res, err := ProposeWriteback(ctx, r, rec, opts, liveState)
	if err != nil {
		t.Fatal(err)
	}
	if len(readFor) != 1 || readFor[0].Kind != "Deployment" || readFor[0].Namespace != "web-production" {
		t.Fatalf("live state read for %v, want the rendered Deployment", readFor)
	}
	if res.Branch != "throughline/breakglass/web/production/inc-42" || res.Commit == "" || res.Commit == src {
		t.Fatalf("result %+v", res)
	}
	var got strings.Builder
	for _, ch := range res.Changes {
		got.WriteString(ch.String() + "\n")
	}
	for _, f := range append([]string{"apps/web/overlays/production/kustomization.yaml"}, res.Files...) {
		data, err := r.ReadFile(ctx, res.Commit, f)
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString("--- " + f + "\n" + string(data))
	}
	got.WriteString("--- commit message\n" + gittest.Run(t, r.Top, "log", "-1", "--format=%B", res.Commit) + "\n")
	goldenText(t, "writeback/propose.golden", strings.ReplaceAll(got.String(), src, "<source commit>"))

	if tip, err := r.Resolve(ctx, "refs/heads/"+res.Branch); err != nil || tip != res.Commit {
		t.Fatalf("branch %s at %s (%v), want %s", res.Branch, tip, err, res.Commit)
	}
	if parent := gittest.Run(t, r.Top, "rev-parse", res.Commit+"^"); parent != src {
		t.Fatalf("the write-back's parent is %s, want the base %s", parent, src)
	}
	if base, _ := r.BaseRev(ctx); base != src {
		t.Fatalf("the base moved to %s", base)
	}
	if _, err := ProposeWriteback(ctx, r, rec, opts, liveState); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Fatalf("a second write-back: %v, want the branch refused", err)
	}
}

// TestProposeWritebackNothingPermanent: with only other writers' changes
// nothing is committed and the result names the base.
func TestProposeWritebackNothingPermanent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, src := gitopsRepo(t, webFiles)
	opts := WritebackOptions{Base: src, Path: "apps/web/overlays/production", Renderer: "test",
		Compare: Compare{ControllerManagers: DefaultControllerManagers, OtherWriters: append([]string{"kubectl-edit", "kubectl-patch"}, DefaultOtherWriters...)}}
	res, err := ProposeWriteback(ctx, r, pausedRecord(src), opts, func(context.Context, []render.Object) (*Live, error) {
		id := render.ID{Group: "apps", Kind: "Deployment", Namespace: "web-production", Name: "web"}
		return &Live{Objects: map[render.ID]map[string]any{id: fromJSON(t, liveProduction)}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Branch != "" || res.Commit != src || len(res.Files) != 0 || len(res.Changes) != 4 {
		t.Fatalf("result %+v", res)
	}
	for _, ch := range res.Changes {
		if ch.Class != OtherWriter {
			t.Errorf("change %s", ch)
		}
	}
}

// TestProposeWritebackRefusals: the desired state before the pause must be
// known; a failing live read is the write-back's error.
func TestProposeWritebackRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, src := gitopsRepo(t, webFiles)
	opts := WritebackOptions{Base: src, Path: "apps/web/overlays/production"}
	for name, rev := range map[string]string{"no source revision": "", "unknown revision": "main@sha1:" + strings.Repeat("1", 40)} {
		rec := pausedRecord(src)
		rec.SourceRevision = rev
		_, err := ProposeWriteback(ctx, r, rec, opts, nil)
		if exitcode.Code(err) != exitcode.Refused {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
	boom := errors.New("the API server is gone")
	_, err := ProposeWriteback(ctx, r, pausedRecord(src), opts, func(context.Context, []render.Object) (*Live, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Errorf("a failing live read: %v", err)
	}
}

// goldenText compares got with testdata/<name> (internal/golden).
func goldenText(t *testing.T, name, got string) {
	t.Helper()
	golden.Compare(t, "testdata/"+name, []byte(got))
}
