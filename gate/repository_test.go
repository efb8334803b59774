package gate

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/internal/hostile"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/render"
)

const (
	staging    = "apps/checkout/overlays/staging"
	production = "apps/checkout/overlays/production"
	prodApp    = "clusters/production/checkout.yaml"
	// prodFlux is prodApp once runByFlux has replaced it.
	prodFlux = prodApp
	// prodProject is production's AppProject.
	prodProject = "clusters/production/project.yaml"
)

var exampleRepo = filepath.Join("..", "examples", "gitops-env")

// fixture is the example environment in a Git repository (the GitOps root
// in a subdirectory, as Argo CD allows), on main.
type fixture struct {
	t         testing.TB
	top, root string
	repo      *gitops.Repo
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, func(root string) {
		testenv.RemoveTrust(t, root) // made-up digests, no evidence in any registry: the trust step is trusted_test.go's
	})
}

// newFixtureWith is newFixture with the copy of the example edited by
// edit before the first commit.
func newFixtureWith(t *testing.T, edit func(root string)) *fixture {
	t.Helper()
	f := &fixture{t: t, top: t.TempDir()}
	f.root = filepath.Join(f.top, "gitops")
	copyDir(t, exampleRepo, f.root)
	edit(f.root)
	f.git("init", "-q", "-b", "main")
	f.commit("example")
	var err error
	if f.repo, err = gitops.OpenLocal(context.Background(), f.root); err != nil {
		t.Fatal(err)
	}
	return f
}

// git runs git at the top of the fixture's repository (gittest.Run).
func (f *fixture) git(args ...string) {
	f.t.Helper()
	gittest.Run(f.t, f.top, args...)
}

// write writes files under the GitOps root (gittest.Write).
func (f *fixture) write(files map[string]string) {
	f.t.Helper()
	gittest.Write(f.t, f.root, files)
}

func (f *fixture) read(p string) string {
	f.t.Helper()
	data, err := os.ReadFile(filepath.Join(f.root, filepath.FromSlash(p)))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(data)
}

// replace replaces the one occurrence of old by repl in the file p under
// the GitOps root (gittest.Replace).
func (f *fixture) replace(p, old, repl string) {
	f.t.Helper()
	gittest.Replace(f.t, f.root, p, old, repl)
}

// commit stages everything and commits it (gittest.Commit).
func (f *fixture) commit(msg string) {
	f.t.Helper()
	gittest.Commit(f.t, f.top, msg, nil)
}

// runByFlux, called in a change of branch "pr", commits on main checkout
// run by Flux instead of Argo CD in staging and production (the example's
// examples/flux/clusters/<env>/checkout.yaml replacing its Application),
// and moves "pr" onto it.
func (f *fixture) runByFlux() {
	f.t.Helper()
	f.git("checkout", "-q", "main")
	for _, env := range []string{"staging", "production"} {
		data, err := os.ReadFile(filepath.Join(exampleRepo, "..", "flux", "clusters", env, "checkout.yaml"))
		if err != nil {
			f.t.Fatal(err)
		}
		f.write(map[string]string{"clusters/" + env + "/checkout.yaml": string(data)})
	}
	f.commit("checkout run by Flux")
	f.git("checkout", "-q", "-B", "pr", "main")
}

// branch commits change on a new branch from main and returns to main.
func (f *fixture) branch(name string, change func()) {
	f.t.Helper()
	f.git("checkout", "-q", "-b", name, "main")
	change()
	f.commit(name)
	f.git("checkout", "-q", "main")
}

func (f *fixture) check(head string) *RepositoryReport {
	f.t.Helper()
	return f.checkWith(Request{Base: "main", Head: head})
}

// checkWith is check with the request's options (Base and Head set).
func (f *fixture) checkWith(req Request) *RepositoryReport {
	f.t.Helper()
	rep, err := CheckRepository(context.Background(), f.repo, req)
	if err != nil {
		f.t.Fatal(err)
	}
	if len(rep.Findings) != len(rep.Refusals) || rep.OK != (len(rep.Refusals) == 0) {
		f.t.Fatalf("%d findings, %d refusals, ok %v", len(rep.Findings), len(rep.Refusals), rep.OK)
	}
	for i, fd := range rep.Findings {
		if fd.Reason != rep.Refusals[i] || fd.Rule == "" {
			f.t.Fatalf("finding %d %+v, refusal %q", i, fd, rep.Refusals[i])
		}
	}
	return rep
}

func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rules lists the distinct rules of the report's findings, sorted.
func rules(rep *RepositoryReport) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range rep.Findings {
		if !seen[f.Rule] {
			seen[f.Rule] = true
			out = append(out, f.Rule)
		}
	}
	sort.Strings(out)
	return out
}

// changes is every difference of environment env as text.
func changes(rep *RepositoryReport, env string) string {
	var b strings.Builder
	for _, e := range rep.Environments {
		if e.Name != env {
			continue
		}
		for _, o := range e.Overlays {
			for _, c := range o.Changes {
				b.WriteString(o.Path + ": " + c.String() + "\n")
			}
			if o.Checks != "" {
				b.WriteString(o.Path + "/throughline-checks.yaml: runtime checks " + o.Checks + "\n")
			}
		}
	}
	return b.String()
}

// cartStaging is a second app's staging overlay that also renders the
// Deployment checkout in checkout-staging.
const cartStaging = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: checkout-staging
resources:
  - deployment.yaml
`

const cartDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: checkout
spec:
  selector:
    matchLabels: {app: cart}
  template:
    metadata:
      labels: {app: cart}
    spec:
      containers:
        - name: cart
          image: ghcr.io/throughline-dev/cart@sha256:1111111111111111111111111111111111111111111111111111111111111111
`

const multiSource = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: checkout-staging-twice
  namespace: argocd
spec:
  project: staging
  sources:
    - repoURL: https://git.example.test/platform/gitops-env.git
      targetRevision: main
      path: apps/checkout/overlays/staging
    - repoURL: https://git.example.test/platform/gitops-env.git
      targetRevision: main
      path: apps/checkout/overlays/staging
  destination:
    server: https://kubernetes.default.svc
    namespace: checkout-staging
`

// TestCheck: the attacks of issue 14 on the every-PR check, each a real
// commit in a real repository, and the changes that must pass.
func TestCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(f *fixture)
		rules  []string
	}{
		{"staging copied over production", func(f *fixture) {
			for _, n := range []string{"kustomization.yaml", "environment.yaml"} {
				f.write(map[string]string{production + "/" + n: f.read(staging + "/" + n)})
			}
		}, []string{RuleProtected}},
		{"unprotected change passes with its differences", func(f *fixture) {
			k := staging + "/kustomization.yaml"
			f.write(map[string]string{k: strings.Replace(f.read(k), "count: 2", "count: 3", 1)})
		}, nil},
		{"one object rendered by two apps", func(f *fixture) {
			f.write(map[string]string{"apps/cart/overlays/staging/kustomization.yaml": cartStaging,
				"apps/cart/overlays/staging/deployment.yaml": cartDeployment})
		}, []string{RuleDuplicate}},
		{"staging Application pointing at production", func(f *fixture) {
			p := "clusters/staging/checkout.yaml"
			f.write(map[string]string{p: strings.Replace(f.read(p), "path: "+staging, "path: "+production, 1)})
		}, []string{RuleController}},
		{"staging Application with a production namespace", func(f *fixture) {
			p := "clusters/staging/checkout.yaml"
			f.write(map[string]string{p: strings.Replace(f.read(p), "namespace: checkout-staging", "namespace: checkout-production", 1)})
		}, []string{RuleController}},
		{"Application whose path is no registered overlay", func(f *fixture) {
			p := "clusters/staging/checkout.yaml"
			f.write(map[string]string{p: strings.Replace(f.read(p), "path: "+staging, "path: apps/checkout/overlays/refused-unpinned", 1)})
		}, []string{RuleController}},
		{"Flux Kustomization pointing at production", func(f *fixture) {
			f.runByFlux()
			p := "clusters/staging/checkout.yaml"
			f.write(map[string]string{p: strings.Replace(f.read(p), "path: ./"+staging, "path: ./"+production, 1)})
		}, []string{RuleController}},
		// Issue 32: the example used to deploy each checkout overlay with an
		// Application and a Kustomization at once.
		{"a Flux Kustomization beside the Argo CD Application of one overlay", func(f *fixture) {
			data, err := os.ReadFile(filepath.Join(exampleRepo, "..", "flux", "clusters", "staging", "checkout.yaml"))
			if err != nil {
				f.t.Fatal(err)
			}
			f.write(map[string]string{"clusters/staging/checkout-flux.yaml": string(data)})
		}, []string{RuleController}},
		{"multi-source Application rendering one object twice", func(f *fixture) {
			f.write(map[string]string{"clusters/staging/checkout-twice.yaml": multiSource})
		}, []string{RuleController, RuleMultiSource}},
		{"production runtime checks loosened outside a promotion", func(f *fixture) {
			p := production + "/throughline-checks.yaml"
			f.write(map[string]string{p: strings.Replace(f.read(p), "soak: 30m", "soak: 1s", 1)})
		}, []string{RuleProtected}},
		{"production runtime checks deleted outside a promotion", func(f *fixture) {
			if err := os.Remove(filepath.Join(f.root, production, "throughline-checks.yaml")); err != nil {
				f.t.Fatal(err)
			}
		}, []string{RuleProtected}},
		// Issue 32: staging's checks judge the evidence production accepts:
		// reported in staging, refused as a change to what judges production
		// (judges_test.go: and passed with production's signed approvals).
		{"staging runtime checks changed: what judges production", func(f *fixture) {
			p := staging + "/throughline-checks.yaml"
			f.write(map[string]string{p: strings.Replace(f.read(p), "soak: 10m", "soak: 5m", 1)})
		}, []string{RuleApprovalCount, RuleJudges}},
		// Issue 32: production's controllers re-pointed, each bound by the
		// environment's binding in the registry (read at the base).
		{"production Application reading an attacker's fork", func(f *fixture) {
			f.replace(prodApp, "repoURL: https://git.example.test/platform/gitops-env.git", "repoURL: https://github.com/attacker/fork.git")
		}, []string{RuleApprovalCount, RuleController, RuleJudges}},
		{"production Application on another branch", func(f *fixture) {
			f.replace(prodApp, "targetRevision: main", "targetRevision: evil")
		}, []string{RuleApprovalCount, RuleController, RuleJudges}},
		{"production Application pinned to a commit", func(f *fixture) {
			f.replace(prodApp, "targetRevision: main", "targetRevision: 0123456789abcdef0123456789abcdef01234567")
		}, []string{RuleApprovalCount, RuleController, RuleJudges}},
		{"production Application deploying to another cluster", func(f *fixture) {
			f.replace(prodApp, "server: https://kubernetes.default.svc", "server: https://staging-eu-1.example.test")
		}, []string{RuleApprovalCount, RuleController, RuleJudges}},
		{"production Application in another project", func(f *fixture) {
			f.replace(prodApp, "project: production", "project: production-admin")
		}, []string{RuleApprovalCount, RuleController, RuleJudges}},
		{"production Kustomization reading another source", func(f *fixture) {
			f.runByFlux()
			f.replace(prodFlux, "name: gitops-env", "name: attacker-fork")
		}, []string{RuleApprovalCount, RuleController, RuleJudges}},
		{"production Kustomization applying to another cluster", func(f *fixture) {
			f.runByFlux()
			f.replace(prodFlux, "  prune: true\n", "  prune: true\n  kubeConfig:\n    secretRef:\n      name: staging-kubeconfig\n")
		}, []string{RuleApprovalCount, RuleController, RuleJudges}},
		{"production Kustomization applying as a cluster admin", func(f *fixture) {
			f.runByFlux()
			f.replace(prodFlux, "serviceAccountName: production-apply", "serviceAccountName: kustomize-controller")
		}, []string{RuleApprovalCount, RuleController, RuleJudges}},
		// Issue 32: the least-privilege layer. Production's AppProject is
		// what Argo CD enforces: it reaches no further than the registry.
		{"production's AppProject reading any repository", func(f *fixture) {
			f.replace(prodProject, "    - https://git.example.test/platform/gitops-env.git", "    - '*'")
		}, []string{RuleApprovalCount, RuleController, RuleJudges}},
		{"production's AppProject deploying to every namespace of any cluster", func(f *fixture) {
			f.replace(prodProject, "    - server: https://kubernetes.default.svc\n      namespace: \"*-production\"", "    - server: '*'\n      namespace: '*'")
		}, []string{RuleApprovalCount, RuleController, RuleJudges}},
		{"staging's controller files redefining production's AppProject", func(f *fixture) {
			f.write(map[string]string{"clusters/staging/project-production.yaml": f.read(prodProject)})
		}, []string{RuleController}},
		{"an AppProject outside clusters/ defining production's", func(f *fixture) {
			f.write(map[string]string{"platform/project.yaml": f.read(prodProject)})
		}, []string{RuleController}},
		{"the binding and the Application re-pointed in one PR", func(f *fixture) {
			// production's binding (the policy's second: staging's comes first)
			pol := f.read("throughline-policy.yaml")
			i := strings.Index(pol, "  production:\n")
			f.write(map[string]string{"throughline-policy.yaml": pol[:i] + strings.Replace(pol[i:], "https://git.example.test/platform/gitops-env.git",
				"https://github.com/attacker/fork.git", 1)})
			f.replace(prodApp, "repoURL: https://git.example.test/platform/gitops-env.git", "repoURL: https://github.com/attacker/fork.git")
		}, []string{RuleApprovalCount, RuleController, RuleJudges}},
		{"a second production Application on the same overlay", func(f *fixture) {
			f.write(map[string]string{"clusters/production/checkout-again.yaml": strings.Replace(f.read(prodApp), "name: checkout-production",
				"name: checkout-production-again", 1)})
		}, []string{RuleApprovalCount, RuleController, RuleJudges}},
		{"an Application outside clusters/ deploying production's overlay", func(f *fixture) {
			f.write(map[string]string{"platform/checkout.yaml": strings.Replace(f.read(prodApp), "name: checkout-production",
				"name: checkout-platform", 1)})
		}, []string{RuleController}},
		{"an Application in JSON under platform/, its path spelled ./path/", func(f *fixture) {
			f.write(map[string]string{"platform/checkout.json": `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application",` +
				`"metadata":{"name":"checkout-json","namespace":"argocd"},"spec":{"project":"default","source":{` +
				`"repoURL":"https://git.example.test/platform/gitops-env.git","path":"./` + production + `/"},` +
				`"destination":{"server":"https://kubernetes.default.svc","namespace":"checkout-production"}}}`})
		}, []string{RuleController}},
		{"an app-of-apps in staging's overlay deploying production's", func(f *fixture) {
			k := staging + "/kustomization.yaml"
			f.write(map[string]string{staging + "/child.yaml": f.read(prodApp),
				k: strings.Replace(f.read(k), "  - ../../base\n", "  - ../../base\n  - child.yaml\n", 1)})
		}, []string{RuleController}},
		{"README only", func(f *fixture) {
			f.write(map[string]string{"README.md": "hello\n"})
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.branch("pr", func() { tc.change(f) })
			rep := f.check("pr")
			if got := rules(rep); !slices.Equal(got, tc.rules) {
				t.Errorf("rules %q, want %q\n%s", got, tc.rules, strings.Join(rep.Refusals, "\n"))
			}
			if _, err := json.Marshal(rep); err != nil {
				t.Fatal(err)
			}
			// The wording: every refusal and every difference, once.
			golden.Compare(t, "testdata/"+t.Name()+".golden",
				[]byte(strings.Join(rep.Refusals, "\n")+"\n--- production\n"+changes(rep, "production")+"--- staging\n"+changes(rep, "staging")))
		})
	}
}

// TestCheckAliasBombOutsideClusters: every file of the repository is now
// looked at for controller objects, through the render's bounded reader:
// an alias bomb naming Argo CD's API group under platform/ is invalid
// input (exit 4) naming the file, never expanded.
func TestCheckAliasBombOutsideClusters(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	bomb := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: bomb}\n" + hostile.AliasBomb(10, 12)
	f.branch("bomb", func() { f.write(map[string]string{"platform/bomb.yaml": bomb}) })
	_, err := CheckRepository(context.Background(), f.repo, Request{Base: "main", Head: "bomb"})
	var in *exitcode.InvalidInput
	if !errors.As(err, &in) || in.File != "platform/bomb.yaml" || !errors.Is(err, render.ErrYAMLLimit) {
		t.Fatalf("want exit 4 naming platform/bomb.yaml wrapping render.ErrYAMLLimit, got exit %d: %v", exitcode.Code(err), err)
	}
}

// TestCheckPromotion: a change that carries exactly one record is a
// promotion: its target is the promotion gate's to judge (Report.Promotion),
// every other environment is judged here.
func TestCheckPromotion(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.branch("pr", func() {
		k := production + "/kustomization.yaml"
		f.write(map[string]string{k: strings.Replace(f.read(k), "count: 6", "count: 8", 1),
			"promotion/checkout/production.yaml": "not judged here\n"})
	})
	rep := f.check("pr")
	if !rep.OK || rep.Promotion == nil || rep.Promotion.App != "checkout" || rep.Promotion.Environment != "production" {
		t.Fatalf("promotion: %+v %q", rep.Promotion, rep.Refusals)
	}
	// Production changes beside another environment's record: refused.
	f.branch("other", func() {
		k := production + "/kustomization.yaml"
		f.write(map[string]string{k: strings.Replace(f.read(k), "count: 6", "count: 8", 1),
			"promotion/checkout/staging.yaml": "a staging record\n"})
	})
	if rep := f.check("other"); strings.Join(rules(rep), " ") != RuleProtected {
		t.Fatalf("production beside a staging record: %q", rep.Refusals)
	}
}

// TestCheckPreexisting: a finding already true at base is listed, not
// this change's refusal.
func TestCheckPreexisting(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write(map[string]string{"clusters/staging/checkout-twice.yaml": multiSource})
	f.commit("a multi-source Application")
	f.branch("pr", func() { f.write(map[string]string{"README.md": "hello\n"}) })
	rep := f.check("pr")
	// Four objects rendered by both sources, and the second controller of
	// staging's overlay on its cluster.
	if !rep.OK || len(rep.Preexisting) != 5 {
		t.Fatalf("%q %+v", rep.Refusals, rep.Preexisting)
	}
	for _, p := range rep.Preexisting {
		if p.Rule != RuleMultiSource && p.Rule != RuleController {
			t.Fatalf("preexisting %+v", p)
		}
	}
}

func openRepo(root string) (*gitops.Repo, error) {
	return gitops.OpenLocal(context.Background(), root)
}

// TestCheckChecksSymlink: production's runtime checks file replaced by a
// symlink to staging's (looser) file is neither followed nor compared as
// text: the check fails with exit 4 naming the file.
func TestCheckChecksSymlink(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.branch("pr", func() {
		p := filepath.Join(f.root, production, "throughline-checks.yaml")
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../staging/throughline-checks.yaml", p); err != nil {
			t.Fatal(err)
		}
	})
	_, err := CheckRepository(context.Background(), f.repo, Request{Base: "main", Head: "pr"})
	if in := invalidInput(err); in == nil || in.File != production+"/throughline-checks.yaml" {
		t.Fatalf("a symlinked checks file: %v (exit %d), want exit 4 naming the file", err, exitcode.Code(err))
	}
}

// TestCheckControllerFileLinks: a link among the repository's other files
// (a YAML file outside clusters/ that points elsewhere) is no controller
// object and no reason to fail every PR; a claimed controller file that is
// a link, whose content would come from another file, is invalid input.
func TestCheckControllerFileLinks(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	link := func(branch, p, target string) {
		f.branch(branch, func() {
			abs := filepath.Join(f.root, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
				t.Fatal(err)
			}
			_ = os.Remove(abs)
			if err := os.Symlink(target, abs); err != nil {
				t.Fatal(err)
			}
		})
	}
	link("other", "platform/values.yaml", "../"+prodApp)
	if rep := f.check("other"); !rep.OK {
		t.Fatalf("a linked YAML file outside clusters/: %q", rep.Refusals)
	}
	link("claimed", prodApp, "../staging/checkout.yaml")
	_, err := CheckRepository(context.Background(), f.repo, Request{Base: "main", Head: "claimed"})
	if in := invalidInput(err); in == nil || in.File != prodApp || !errors.Is(err, gitrepo.ErrSymlink) {
		t.Fatalf("a linked controller file: %v (exit %d), want exit 4 naming it a symbolic link", err, exitcode.Code(err))
	}
}

// TestCheckPinned: an environment whose binding is pinned names a commit
// in its Applications, moved only by promote reconcile (in the commit that
// records it as desired, promote's TestReconcileMovesPin): a pull request
// that moves the pin, or names a branch, is refused naming the record.
func TestCheckPinned(t *testing.T) {
	t.Parallel()
	app := "clusters/staging/checkout.yaml"
	for _, tc := range []struct {
		name, pin string
		// field and old are the finding's (controller-binding, on app);
		// field "" passes.
		field, old string
	}{
		{"the pin is the record's desired revision", pinnedDesired, "", ""},
		{"a pull request moves the pin", "7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b", "spec.source.targetRevision", pinnedDesired},
		{"a pull request names a branch", "main", "spec.source.targetRevision", "a commit of main"},
		{"a pull request names a short commit", "c0ffee00", "spec.source.targetRevision", "a commit of main"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := pinnedFixture(t)
			f.branch("pr", func() {
				f.replace(app, "targetRevision: "+pinnedDesired, "targetRevision: "+tc.pin)
				f.write(map[string]string{"README.md": "hello\n"})
			})
			rep := f.check("pr")
			if tc.field == "" {
				if !rep.OK || len(rep.Preexisting) != 0 {
					t.Fatalf("refused: %q, preexisting %+v", rep.Refusals, rep.Preexisting)
				}
				return
			}
			want := Finding{Rule: RuleController, Environment: "staging", File: app, Object: "Application argocd/checkout-staging", Field: tc.field,
				Old: tc.old, New: tc.pin}
			if len(rep.Findings) != 1 {
				t.Fatalf("findings %+v, want one %+v", rep.Findings, want)
			}
			got := rep.Findings[0]
			got.Reason = ""
			if got != want {
				t.Fatalf("finding %+v, want %+v", got, want)
			}
			goldenReasons(t, rep.Findings)
		})
	}
}

// appSet is production's Applications as one ApplicationSet with a Git
// directory generator (the GitOps root is the fixture repository's gitops/
// directory: the generator's paths are from the repository's top).
const appSet = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: production
  namespace: argocd
spec:
  generators:
    - git:
        repoURL: https://git.example.test/platform/gitops-env.git
        revision: main
        directories:
          - path: gitops/apps/*/overlays/production
  template:
    metadata:
      name: '{{path[2]}}-production'
    spec:
      project: production
      source:
        repoURL: https://git.example.test/platform/gitops-env.git
        targetRevision: main
        path: '{{path}}'
        plugin:
          name: throughline-v1
          parameters:
            - name: environment
              string: production
            - name: app
              string: '{{path[2]}}'
      destination:
        server: https://kubernetes.default.svc
        namespace: '{{path[2]}}-production'
`

// TestCheckApplicationSet (issue 32): an ApplicationSet's Applications are
// expanded from the repository (list and Git directory generators, the
// controller's template parameters) and each is bound like a committed
// Application; one whose output the repository does not determine is
// refused in a claimed file, and one outside the claimed files that
// generates a registered overlay's Application is refused as a stray.
func TestCheckApplicationSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(f *fixture)
		// refused: controller-binding (the wording in the golden file)
		refused bool
	}{
		{"the Applications it generates are production's", func(f *fixture) {
			f.write(map[string]string{"README.md": "hello\n"})
		}, false},
		{"its directories reach every environment's overlays", func(f *fixture) {
			f.replace("clusters/production/apps.yaml", "gitops/apps/*/overlays/production", "gitops/apps/*/overlays/*")
		}, true},
		{"its template deploys to staging's namespaces", func(f *fixture) {
			f.replace("clusters/production/apps.yaml", "namespace: '{{path[2]}}-production'", "namespace: '{{path[2]}}-staging'")
		}, true},
		{"a list generator naming staging's overlay", func(f *fixture) {
			f.replace("clusters/production/apps.yaml", `    - git:
        repoURL: https://git.example.test/platform/gitops-env.git
        revision: main
        directories:
          - path: gitops/apps/*/overlays/production`, `    - list:
        elements:
          - app: checkout
            env: staging`)
			f.replace("clusters/production/apps.yaml", "path: '{{path}}'", "path: 'gitops/apps/{{app}}/overlays/{{env}}'")
		}, true},
		{"a clusters generator", func(f *fixture) {
			f.replace("clusters/production/apps.yaml", "    - git:\n", "    - clusters: {}\n    - git:\n")
		}, true},
		{"a Go template", func(f *fixture) {
			f.replace("clusters/production/apps.yaml", "spec:\n  generators:", "spec:\n  goTemplate: true\n  generators:")
		}, true},
		{"a Git generator reading another repository", func(f *fixture) {
			f.replace("clusters/production/apps.yaml", "    - git:\n        repoURL: https://git.example.test/platform/gitops-env.git",
				"    - git:\n        repoURL: https://github.com/attacker/fork.git")
		}, true},
		{"an ApplicationSet outside clusters/ generating production's Applications", func(f *fixture) {
			f.write(map[string]string{"platform/appset.yaml": strings.Replace(f.read("clusters/production/apps.yaml"), "name: production\n",
				"name: platform\n", 1)})
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixtureWith(t, func(root string) {
				testenv.RemoveTrust(t, root)
				for _, p := range []string{"checkout.yaml", "storefront.yaml"} {
					if err := os.Remove(filepath.Join(root, "clusters", "production", p)); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.WriteFile(filepath.Join(root, "clusters", "production", "apps.yaml"), []byte(appSet), 0o644); err != nil {
					t.Fatal(err)
				}
			})
			f.branch("pr", func() { tc.change(f) })
			rep := f.check("pr")
			if !tc.refused {
				if !rep.OK || len(rep.Preexisting) != 0 {
					t.Fatalf("refused: %q, preexisting %+v", rep.Refusals, rep.Preexisting)
				}
				return
			}
			if !slices.Contains(rules(rep), RuleController) {
				t.Fatalf("rules %q, want %s: %q", rules(rep), RuleController, rep.Refusals)
			}
			goldenReasons(t, rep.Findings)
		})
	}
}

// TestControllerFileSymlinkBothSteps: a claimed controller file committed
// as a symbolic link (its content would be staging's Application) is one
// invalid input naming it as a symbolic link, whichever step meets it (the
// controllers step of throughline check, the judges step alone as policy
// approve reads it) and whichever reader reads Git (git cat-file, in
// process): the same error, never the link's text hashed as its content.
func TestControllerFileSymlinkBothSteps(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.branch("link", func() {
		abs := filepath.Join(f.root, filepath.FromSlash(prodApp))
		if err := os.Remove(abs); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../staging/checkout.yaml", abs); err != nil {
			t.Fatal(err)
		}
	})
	var msgs []string
	for _, inProcess := range []bool{false, true} {
		r, err := openRepo(f.root)
		if err != nil {
			t.Fatal(err)
		}
		if inProcess {
			if err := r.ReadInProcess(); err != nil {
				t.Fatal(err)
			}
		}
		_, checkErr := CheckRepository(context.Background(), r, Request{Base: "main", Head: "link"})
		d, judgesErr := JudgesChange(context.Background(), r, "main", "link", "production")
		for step, err := range map[string]error{"check": checkErr, "judges": judgesErr} {
			var in *exitcode.InvalidInput
			if exitcode.Code(err) != exitcode.Invalid || !errors.As(err, &in) || in.File != prodApp || !errors.Is(err, gitrepo.ErrSymlink) {
				t.Fatalf("in process %v, %s step: exit %d, %v (judges %+v): want invalid input %s wrapping gitrepo.ErrSymlink",
					inProcess, step, exitcode.Code(err), err, d, prodApp)
			}
			msgs = append(msgs, err.Error())
		}
	}
	if len(slices.Compact(slices.Clone(msgs))) != 1 {
		t.Fatalf("one link, four errors:\n%s", strings.Join(msgs, "\n"))
	}
}

// TestCheckControllerFileExportAttributes: a pull request's .gitattributes
// decides what git archive exports (export-ignore leaves a file out,
// export-subst rewrites $Format:...$). A claimed controller file is read
// from Git, as a controller applies it: hiding staging's Application from
// the export, or spelling its path as a placeholder the export fills with
// the commit's subject, does not hide its binding to production's overlay.
func TestCheckControllerFileExportAttributes(t *testing.T) {
	t.Parallel()
	const app = "clusters/staging/checkout.yaml"
	for _, tc := range []struct {
		name, attributes, path, subject string
	}{
		{"export-ignore", app + " export-ignore\n", production, "pr"},
		{"export-subst", app + " export-subst\n", "$Format:%s$", staging},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.git("checkout", "-q", "-b", "pr", "main")
			f.write(map[string]string{".gitattributes": tc.attributes})
			f.replace(app, "path: "+staging, "path: "+tc.path)
			f.git("add", "-A")
			f.git("commit", "-q", "-m", tc.subject)
			f.git("checkout", "-q", "main")
			rep := f.check("pr")
			if !slices.Contains(rules(rep), RuleController) {
				t.Fatalf("rules %v, want %s: %q", rules(rep), RuleController, rep.Refusals)
			}
		})
	}
}

// goldenReasons compares the findings' reasons, one a line, with the
// test's golden file: the wording, tested once.
func goldenReasons(t *testing.T, findings []Finding) {
	t.Helper()
	var b strings.Builder
	for _, f := range findings {
		b.WriteString(f.Reason + "\n")
	}
	golden.Compare(t, "testdata/"+t.Name()+".golden", []byte(b.String()))
}

// invalidInput is err's *exitcode.InvalidInput (exit 4), nil when it is
// not one.
func invalidInput(err error) *exitcode.InvalidInput {
	var in *exitcode.InvalidInput
	if exitcode.Code(err) != exitcode.Invalid || !errors.As(err, &in) {
		return nil
	}
	return in
}
