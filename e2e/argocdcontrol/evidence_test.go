//go:build e2e

package argocdcontrol

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/notifier"
	"github.com/throughline-dev/throughline/promotion"
)

const (
	stagingPath = "apps/checkout/overlays/staging"
	renderer    = "v0.0.0-e2e"
)

// stagingEvidence proves the arrow "staging observed revision -> staging
// runtime evidence" through the real application controller: a RECONCILING
// staging record whose desired revision is the commit the controller
// synced (revA) is committed (a later commit of the branch rendering the
// same objects), the controller syncs that commit, and one pass of the
// notifier's resync (as serve wires it, on its own clone, no delivery)
// commits the evidence: ACCEPTED at the revision the controller reports,
// with the imageIDs the kubelet (played by rollout) set. A second pass
// commits nothing.
func (e *env) stagingEvidence(api *testenv.APIServer, revA string) {
	remote := e.git("remote", "get-url", "origin")
	rec := e.reconcilingRecord(revA, image+":1.4.2", digestA, 2)
	revR := e.head()
	e.t.Logf("staging record %s RECONCILING at %.12s, committed in %.12s", rec.PromotionID, revA, revR)

	// The controller compares the record's commit (a later commit rendering
	// the same objects): Synced at it, the app Healthy.
	e.refresh("normal")
	e.waitApp("record commit -> compared revision", 3*time.Minute, func(u *unstructured.Unstructured) bool {
		return str(u, "status", "sync", "revision") == revR && str(u, "status", "sync", "status") == "Synced"
	})
	e.waitHealthy("record commit compared -> app Healthy")
	u := e.app()
	e.t.Logf("Application after the record commit: %s; last sync operation at %.12s", summary(u),
		str(u, "status", "operationState", "syncResult", "revision"))
	// The revision the controller reports: its last sync operation's when
	// there is one (what on-deployed sends), else the compared one.
	observed := str(u, "status", "operationState", "syncResult", "revision")
	if observed == "" {
		observed = str(u, "status", "sync", "revision")
	}

	svc := e.notifierService(api, remote)
	r := svc.Resyncer().Once(e.ctx)
	if len(r) != 1 || r[0].Outcome != notifier.ResyncAccepted || r[0].Commit == "" {
		e.t.Fatalf("arrow staging observed revision -> staging runtime evidence: resync pass %+v, want one %s with a commit", r, notifier.ResyncAccepted)
	}
	if now := str(e.app(), "status", "operationState", "syncResult", "revision"); now != str(u, "status", "operationState", "syncResult", "revision") {
		e.t.Fatalf("the controller synced %.12s during the resync pass", now)
	}
	tip := e.remoteTip(remote)
	if tip != r[0].Commit {
		e.t.Fatalf("arrow staging runtime evidence -> Git: main is at %.12s, the resync committed %.12s", tip, r[0].Commit)
	}
	e.checkEvidence(remote, tip, rec, observed)

	// Exactly once: the record is no longer RECONCILING, a second pass
	// finds nothing and commits nothing.
	if again := svc.Resyncer().Once(e.ctx); len(again) != 0 {
		e.t.Fatalf("arrow staging runtime evidence, exactly once: a second pass found %+v", again)
	}
	if now := e.remoteTip(remote); now != tip {
		e.t.Fatalf("arrow staging runtime evidence, exactly once: a second pass moved main from %.12s to %.12s", tip, now)
	}
	// The later experiments commit on top of the evidence.
	e.git("pull", "-q", "--ff-only", "origin", "main")
}

// reconcilingRecord commits and pushes staging's record of ref@digest in
// state RECONCILING at desired (for A attempt 2: the example's attempt 1
// is ACCEPTED), its rendered hash throughline's own render of the overlay
// at desired, as propose computes it; its earlier gates as promote would
// have recorded them (verified in dev). Production's records are made by
// the CLI (adopt, propose).
func (e *env) reconcilingRecord(desired, ref, digest string, attempt int) *promotion.Record {
	const envName = "staging"
	e.t.Helper()
	repo, err := gitops.OpenLocal(e.ctx, e.work)
	must(e.t, err)
	tree, err := repo.Tree(e.ctx, desired)
	must(e.t, err)
	defer func() { _ = tree.Close() }()
	path, cluster, from := stagingPath, "staging-eu-1", "dev"
	d, err := tree.Declare(e.ctx, path, envName, renderer)
	must(e.t, err)
	t0 := time.Now().UTC().Truncate(time.Second)
	tg := promotion.Target{Environment: envName, Path: path, Cluster: cluster,
		RenderedHash: d.Hash, BaseRenderedHash: d.Hash, Renderer: renderer}
	rec, err := promotion.NewCandidate("checkout", attempt, promotion.Artifact{Image: ref + "@" + digest, Digest: digest,
		SourceCommit: "0d1c2b3a495867768594a3b2c1d0e0f1a2b3c4d5"}, tg, t0, "ci")
	must(e.t, err)
	dev := "7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b"
	must(e.t, rec.Verify(promotion.VerifiedIn{Environment: from, DesiredRevision: dev, ObservedRevision: dev,
		RenderedHash:    "sha256:3f1d0c9b8a7e6d5c4b3a29180706f5e4d3c2b1a09f8e7d6c5b4a392817060504",
		RuntimeEvidence: "evidence/" + from + "/checkout/checkout-" + from + "-9c2f1e0d7b6a-1.json"}, t0, "notifier"))
	must(e.t, rec.Approve("alice@example.com", rec.InputFor(renderer), t0.Add(24*time.Hour), t0))
	must(e.t, rec.Reconcile(desired, t0, "ci"))
	y, err := rec.Marshal()
	must(e.t, err)
	must(e.t, os.WriteFile(filepath.Join(e.work, filepath.FromSlash(promotion.RecordPath("checkout", envName))), y, 0o644))
	e.git("add", "-A")
	e.git("commit", "-q", "-m", "promotion: "+rec.PromotionID+" RECONCILING")
	e.git("push", "-q", "origin", "main")
	return rec
}

// notifierService starts the notifier as serve does from the release image
// (notifier.Start on an in-process clone, serve --notifier-git-url) of
// the Git server's repository, reading the test's API server; its resync
// loop is not started (the test runs its passes). It signs the evidence
// with e.notifier's key, from a file as serve reads it.
func (e *env) notifierService(api *testenv.APIServer, remote string) *notifier.Service {
	e.t.Helper()
	return e.notifierServiceWith(api, remote, "")
}

// notifierServiceWith is notifierService that, with summaryKeyFile (serve
// --notifier-summary-key-file), also publishes the signed verification
// summary of each acceptance next to the image in its registry.
func (e *env) notifierServiceWith(api *testenv.APIServer, gitURL, summaryKeyFile string) *notifier.Service {
	e.t.Helper()
	repo, err := gitops.Clone(e.ctx, gitrepo.CloneOptions{URL: gitURL, Dir: filepath.Join(e.t.TempDir(), "notifier")})
	must(e.t, err)
	t := e.t
	keyFile := filepath.Join(t.TempDir(), "evidence-key") // as serve reads it from its Secret
	must(t, os.WriteFile(keyFile, e.notifier.PrivatePEM(t), 0o600))
	svc, err := notifier.Start(e.ctx, notifier.ServiceConfig{
		Handler: notifier.Config{ArgoCDToken: []byte("s3cr3t-t0ken"), Rate: -1}, Addr: "127.0.0.1:0", Repo: repo, Kube: api.Config,
		ResyncInterval: time.Minute, OnResync: func(r notifier.Resynced) { t.Logf("resync: %+v", r) }, EvidenceKeyFile: keyFile,
		SummaryKeyFile: summaryKeyFile,
		SummaryRemote:  []remote.Option{remote.WithAuth(authn.Anonymous)},
		OnSummaryError: func(ev *evidence.Record, err error) {
			t.Errorf("the verification summary of %s in %s (%s) was not published: %v", ev.App, ev.Environment, ev.PromotionID, err)
		},
	})
	must(e.t, err)
	e.t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	return svc
}

// remoteTip is main's commit on the Git server.
func (e *env) remoteTip(remote string) string {
	e.t.Helper()
	return strings.Fields(testenv.Git(e.t, e.ctx, e.gitEnv, e.work, "ls-remote", remote, "refs/heads/main"))[0]
}

// checkEvidence reads the record and the evidence at tip on the Git server
// and checks both against the controller's observed revision and the Pods
// (of want's environment, in e.ns).
func (e *env) checkEvidence(remote, tip string, want *promotion.Record, observed string) {
	e.t.Helper()
	envName, digest := want.Target.Environment, want.Artifact.Digest
	arrow := "arrow " + envName + " observed revision -> " + envName + " runtime evidence"
	clone := filepath.Join(e.t.TempDir(), "check")
	testenv.Git(e.t, e.ctx, e.gitEnv, filepath.Dir(clone), "clone", "-q", remote, clone)
	show := func(file string) []byte {
		return []byte(testenv.Git(e.t, e.ctx, e.gitEnv, clone, "show", tip+":"+file))
	}
	evPath := evidence.Path(envName, "checkout", want.PromotionID)
	ev, err := evidence.Parse(evPath, show(evPath))
	must(e.t, err)
	if ev.Decision != promotion.Accepted || ev.ObservedRevision != observed || ev.ReportedBy.Source != "argocd" ||
		ev.ReportedBy.Controller != notifier.ResyncController || ev.Acceptance != e.ns+"/"+accName {
		e.t.Fatalf("%s: %s: decision %s (%s), observed %.12s (the controller reports %.12s), reported by %+v, Acceptance %s",
			arrow, evPath, ev.Decision, ev.Reason, ev.ObservedRevision, observed, ev.ReportedBy, ev.Acceptance)
	}
	// The imageIDs the kubelet (played by rollout) set on the running Pods.
	pods := &corev1.PodList{}
	must(e.t, e.c.List(e.ctx, pods, client.InNamespace(e.ns)))
	kubelet := map[string][]string{} // container -> the imageIDs of its Pods
	for _, p := range pods.Items {
		for _, c := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			kubelet[c.Name] = append(kubelet[c.Name], c.ImageID)
		}
	}
	var got []string
	for _, p := range ev.Pods {
		ids := kubelet[p.Container]
		if p.Declared != digest || p.Outcome != "Verified" || p.Pods != len(pods.Items) || len(ids) != len(pods.Items) ||
			slices.ContainsFunc(ids, func(id string) bool { return id != p.ImageID }) {
			e.t.Fatalf("%s: %s: %+v, want declared %s verified in all %d Pods with the imageID the kubelet set (%q)",
				arrow, evPath, p, digest, len(pods.Items), ids)
		}
		got = append(got, p.Container+" "+p.ImageID)
	}
	if len(ev.Pods) == 0 || len(ev.Pods) != len(kubelet) {
		e.t.Fatalf("%s: %s: pods %q, want one entry per container the kubelet runs (%d)", arrow, evPath, got, len(kubelet))
	}
	rp := promotion.RecordPath("checkout", envName)
	rec, err := promotion.Parse(rp, show(rp))
	must(e.t, err)
	if rec.PromotionID != want.PromotionID || rec.State != promotion.Accepted || rec.Accepted == nil ||
		rec.Accepted.ObservedRevision != observed || rec.Accepted.RuntimeEvidence != evPath {
		e.t.Fatalf("%s: %s: %s %s, accepted %+v, want ACCEPTED at %.12s with %s", arrow, rp, rec.PromotionID, rec.State, rec.Accepted, observed, evPath)
	}
	e.t.Logf("evidence %s ACCEPTED at %.12s (desired %.12s): %q", evPath, observed, want.Reconciling.DesiredRevision, got)
}
