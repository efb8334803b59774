//go:build e2e

package argocdcontrol

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/notifier"
)

// TestArgoCDUnchangedRenderAccepted is issue 34's first break with the
// real Argo CD control plane: a promotion whose merge changes nothing live
// (the same digest promoted again after a HALT or REJECT, or objects that
// are identical). Staging runs A, synced at revA and verified; a new
// commit that changes nothing staging renders is the promotion's desired
// commit. Argo CD compares it (and the record's commit after it), finds
// the Application Synced and runs no sync:
// status.operationState.syncResult.revision stays at revA, an ancestor of
// the desired commit. The notifier's resync decides it as observed at
// status.sync.revision (the record's commit, a descendant of the desired
// one that renders the approved objects): ACCEPTED. Before the fix the
// resync answered "wait" until reconcileDeadline HALTED it.
func TestArgoCDUnchangedRenderAccepted(t *testing.T) {
	e, api, remote, revA := stagingAtA(t)
	ctx := e.ctx

	// The promotion's merge: a commit that changes nothing staging renders.
	readme := filepath.Join(e.work, "README.md")
	b, err := os.ReadFile(readme)
	if err != nil && !os.IsNotExist(err) {
		must(t, err)
	}
	must(t, os.WriteFile(readme, append(b, []byte("\n# merge: checkout A to staging again (nothing changes live)\n")...), 0o644))
	e.git("add", "-A")
	e.git("commit", "-q", "-m", "Merge promotion/checkout/staging: A again")
	e.git("push", "-q", "origin", "main")
	merge := e.head()
	rec := e.reconcilingRecord(merge, image+":1.4.2", digestA, 2)
	revR := e.head()

	e.refresh("normal")
	e.waitApp("record commit -> compared, Synced", 2*time.Minute, func(u *unstructured.Unstructured) bool {
		return str(u, "status", "sync", "revision") == revR && str(u, "status", "sync", "status") == "Synced"
	})
	e.waitHealthy("record commit compared -> app Healthy")
	time.Sleep(2 * time.Second) // an auto-sync, if one were started, would show by now
	u := e.app()
	if got := str(u, "status", "operationState", "syncResult", "revision"); got != revA {
		t.Fatalf("premise: Argo CD ran no sync, its last sync stays at revA %.12s; it is at %.12s (%s)", revA, got, summary(u))
	}

	svc := e.notifierService(api, remote)
	r := svc.Resyncer().Once(ctx)
	if len(r) != 1 || r[0].Outcome != notifier.ResyncAccepted || r[0].Commit == "" {
		t.Fatalf("arrow unchanged render -> ACCEPTED: resync pass %+v, want one %s with a commit", r, notifier.ResyncAccepted)
	}
	if !strings.Contains(r[0].Reason, "Argo CD ran no sync") {
		t.Fatalf("arrow unchanged render -> evidence reason: %q", r[0].Reason)
	}
	tip := e.remoteTip(remote)
	// Observed at status.sync.revision: the record's commit, a descendant of the desired merge.
	e.checkEvidence(remote, tip, rec, revR)
	t.Logf("desired %.12s (merge), last sync %.12s, observed %.12s: %s", merge, revA, revR, r[0].Reason)
}

// stagingAtA starts the API server, the deployment controller, the Git
// server seeded with examples/gitops-env and the real Argo CD control plane
// with plugin.yaml and the shipped health check; staging's Application is
// synced at the seed commit revA, its Pods run A, the Acceptance is
// verified and the app Healthy (the verifier keeps running).
func stagingAtA(t *testing.T) (e *env, api *testenv.APIServer, remote, revA string) {
	testenv.RequireArgoCDControlPlane(t)
	root := testenv.RepoRoot(t)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	t.Cleanup(cancel)
	api = testenv.StartAPIServer(t, testenv.APIServerOptions{
		CRDPaths: []string{filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml")},
	})
	testenv.StartControllerManager(ctx, t, api)
	e = &env{t: t, ctx: ctx, c: api.Client, gitEnv: testenv.GitEnv(t.TempDir()), application: appName, ns: appNS, api: api}
	remote = e.seedGit(root)
	cp := testenv.StartArgoCDControlPlane(t, api, testenv.ArgoCDControlPlaneOptions{
		PluginYAML: filepath.Join(root, "plugin.yaml"),
		PluginPath: filepath.Dir(throughlineBin),
		ConfigData: healthLua(t, root),
	})
	e.argoNS = cp.Namespace
	e.verify = func() { testenv.StartVerifier(ctx, t, api.Config) }
	e.remote = remote
	revA = e.head()
	e.createApplication(root, remote, "staging")
	e.positive(revA) // synced at revA, Pods run A, the Acceptance verified, Healthy
	return e, api, remote, revA
}
