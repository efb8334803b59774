//go:build e2e

package argocdcontrol

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/internal/testenv"
)

// The helpers the experiments share (experiment_*_test.go).

const (
	prodApp  = "checkout-production"
	prodNS   = "checkout-production"
	prodPath = "apps/checkout/overlays/production"
	prodKz   = prodPath + "/kustomization.yaml"
)

// production is a copy of e that reads production's Application and
// namespace (same test, API server, Git and control plane).
func (e *env) production() *env {
	p := *e
	p.application, p.ns = prodApp, prodNS
	return &p
}

// cli runs the throughline binary with the test's Git environment (plus
// extra) and fails the test when it cannot run.
func (e *env) cli(extra []string, args ...string) testenv.CLIResult {
	e.t.Helper()
	r, err := testenv.RunCLI(e.ctx, throughlineBin, append(append([]string{}, e.gitEnv...), extra...), args...)
	must(e.t, err)
	return r
}

// clone is a new clone of the Git server's repository.
func (e *env) clone() string {
	e.t.Helper()
	dir := filepath.Join(e.t.TempDir(), "clone")
	testenv.Git(e.t, e.ctx, e.gitEnv, filepath.Dir(dir), "clone", "-q", e.remote, dir)
	return dir
}

// in runs git in dir.
func (e *env) in(dir string, args ...string) string {
	e.t.Helper()
	return testenv.Git(e.t, e.ctx, e.gitEnv, dir, args...)
}

// signAs makes git in dir sign its commits with k, as k's principal.
func (e *env) signAs(dir string, k sshkey.Key) {
	e.t.Helper()
	for _, kv := range [][2]string{{"gpg.format", "ssh"}, {"user.signingkey", k.Private}, {"user.email", k.Principal}, {"user.name", k.Principal}} {
		e.in(dir, "config", kv[0], kv[1])
	}
}

// deployment is the live Deployment checkout in e.ns.
func (e *env) deployment() *appsv1.Deployment {
	e.t.Helper()
	d := &appsv1.Deployment{}
	must(e.t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "checkout"}, d))
	return d
}

// image is the image of the Deployment's first container.
func imageOf(d *appsv1.Deployment) string { return d.Spec.Template.Spec.Containers[0].Image }

// syncedAt waits until the controller synced rev (its own status: sync
// revision, the last operation's result and phase); arrow names the step.
func (e *env) syncedAt(arrow, rev string) {
	e.t.Helper()
	e.waitApp(arrow, 2*time.Minute, func(u *unstructured.Unstructured) bool {
		return str(u, "status", "sync", "revision") == rev && str(u, "status", "sync", "status") == "Synced" &&
			str(u, "status", "operationState", "syncResult", "revision") == rev && str(u, "status", "operationState", "phase") == "Succeeded"
	})
}

// comparedAt waits until the controller compared rev and found it Synced
// (no sync operation needed: the render did not change).
func (e *env) comparedAt(arrow, rev string) *unstructured.Unstructured {
	e.t.Helper()
	return e.waitApp(arrow, 2*time.Minute, func(u *unstructured.Unstructured) bool {
		return str(u, "status", "sync", "revision") == rev && str(u, "status", "sync", "status") == "Synced"
	})
}

// frozen is what an experiment that must not reach a controller compares
// before and after: the Application's sync revision, its last sync and the
// live Deployment's resourceVersion and image.
type frozen struct{ revision, synced, deployment, image string }

// The Application is first refreshed until it compared main's tip.
func (e *env) freeze() frozen {
	e.t.Helper()
	e.refresh("normal")
	u := e.comparedAt(e.application+" compared at main's tip", e.remoteTip(e.remote))
	d := e.deployment()
	return frozen{str(u, "status", "sync", "revision"), str(u, "status", "operationState", "syncResult", "revision"), d.ResourceVersion, imageOf(d)}
}

// unchanged refreshes the Application, lets the controller compare, and
// fails naming arrow when anything of before moved.
func (e *env) unchanged(arrow string, before frozen) {
	e.t.Helper()
	e.refresh("normal")
	e.waitApp(arrow+": refresh done", time.Minute, func(u *unstructured.Unstructured) bool {
		_, pending := u.GetAnnotations()["argocd.argoproj.io/refresh"]
		return !pending
	})
	time.Sleep(2 * time.Second) // an auto-sync, if one were started, would show by now
	if now := e.freeze(); now != before {
		e.t.Fatalf("arrow %s: %s changed: %+v, was %+v (%s)", arrow, e.application, now, before, summary(e.app()))
	}
}

// short is a digest's first 12 hex digits.
func short(digest string) string { return strings.TrimPrefix(digest, "sha256:")[:12] }

// experiments runs issue 16's experiments 1, 2, 3, 6 and 5 after
// experiment 4, each a subtest, each after the one before passed.
func (e *env) experiments(t *testing.T) {
	if t.Failed() {
		return
	}
	// What outlives one experiment: the suite's registry, the CLI's
	// registry settings and the notifier (as serve runs it, on its own clone).
	e.t = t
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	// The notifier also publishes each acceptance's signed verification
	// summary (issue 38), with a key from a file as serve reads it.
	summaryKey, summaryPub := newSummaryKey(t)
	run := chainRun{reg: reg, repo: reg.Host + "/throughline-dev/checkout", svc: e.notifierServiceWith(e.api, e.remote, summaryKey),
		summaryPub: summaryPub, isolated: []string{"DOCKER_CONFIG=" + t.TempDir(), "THROUGHLINE_CACHE_DIR=" + t.TempDir()}}
	for _, x := range []struct {
		name string
		f    func()
	}{
		{"experiment 1: the chain, staging to production, through both controllers", func() { e.chain(&run) }},
		{"experiment 2: staging on a tag that moves", func() { e.tagDrift(run) }},
		{"experiment 3: staging's overlay copied over production's", e.directoryCopy},
		{"experiment 6: rollback to A through the real controller", func() { e.rollbackToA(run) }},
		{"experiment 7: a rollback into a frozen production, with two signed freeze overrides", func() { e.freezeOverride(run) }},
		{"experiment 5: break-glass with self-heal on", func() { e.breakGlass(run) }},
	} {
		if !t.Run(x.name, func(t *testing.T) { e.t = t; x.f() }) {
			return
		}
	}
}
