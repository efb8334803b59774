//go:build e2e

package supplychain

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/internal/signedevidence"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/promotion"
)

// Accepted is an artifact a played environment accepted (PlayAccepted).
type Accepted struct {
	App, Environment, Cluster string
	// Overlay is the environment's overlay, relative to the GitOps root.
	Overlay string
	// Artifact is what the environment runs (Image: repository:tag@digest).
	Artifact promotion.Artifact
	// Bin is the throughline binary (its render and version), Env its
	// environment.
	Bin string
	Env []string
	// Notifier signs the evidence, as the environment's notifier does
	// (the policy's evidenceSigners lists its key).
	Notifier sshkey.Notifier
}

var newTag = regexp.MustCompile(`(?m)^(\s*newTag:\s*).*$`)

// PlayAccepted commits, in the GitOps work tree dir, a.Artifact's digest
// into the overlay's images: entry unless it is there already (the desired
// commit is then the work tree's HEAD), then writes the
// environment's record ACCEPTED for it with the notifier's evidence file,
// signed by a.Notifier, next to it, both observing the desired commit:
// what the reconciler, the kubelet and the notifier would leave on main
// after the environment ran the artifact (they are PLAYED here;
// e2e/argocdcontrol and e2e/fluxcontrol run them). The caller commits the
// record and the evidence.
func PlayAccepted(t testing.TB, ctx context.Context, dir string, a Accepted) {
	t.Helper()
	k := filepath.Join(dir, filepath.FromSlash(a.Overlay), "kustomization.yaml")
	data, err := os.ReadFile(k)
	if err != nil {
		t.Fatal(err)
	}
	_, tagged, _ := strings.Cut(a.Artifact.Image[strings.LastIndex(a.Artifact.Image, "/")+1:], ":")
	if err := os.WriteFile(k, newTag.ReplaceAll(data, []byte(`${1}"`+tagged+`"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		res, err := testenv.RunCLI(ctx, a.Bin, a.Env, args...)
		if err != nil || res.Code != 0 {
			t.Fatalf("throughline %s: exit %d: %v: %s", strings.Join(args, " "), res.Code, err, res.Stderr)
		}
		return strings.TrimSpace(res.Stdout)
	}
	hash := run("render", "--hash", "--root", dir, filepath.Join(dir, filepath.FromSlash(a.Overlay)))
	renderer := run("version")
	if testenv.Git(t, ctx, a.Env, dir, "status", "--porcelain") != "" { // else the candidacy's merge pinned it
		testenv.Git(t, ctx, a.Env, dir, "add", ".")
		testenv.Git(t, ctx, a.Env, dir, "commit", "-q", "-m", a.Environment+" desires "+a.Artifact.Image)
	}
	t0, rev := time.Now().Add(-time.Hour), testenv.Git(t, ctx, a.Env, dir, "rev-parse", "HEAD")
	rec, err := promotion.NewCandidate(a.App, 1, a.Artifact, promotion.Target{Environment: a.Environment, Path: a.Overlay, Cluster: a.Cluster,
		RenderedHash: hash, BaseRenderedHash: hash, Renderer: renderer}, t0, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	evFile := evidence.Path(a.Environment, a.App, rec.PromotionID)
	for _, err := range []error{
		rec.Verify(promotion.VerifiedIn{Environment: "dev", DesiredRevision: strings.Repeat("2", 40), ObservedRevision: strings.Repeat("2", 40),
			RenderedHash: "sha256:" + strings.Repeat("3", 64), RuntimeEvidence: "evidence/dev/" + a.App + "/1.json"}, t0, "e2e"),
		rec.Approve("alice", rec.InputFor(renderer), t0.Add(48*time.Hour), t0),
		rec.Reconcile(rev, t0, "e2e"),
		rec.Accept(rev, evFile, t0, "e2e"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	recData, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	name, _, _ := strings.Cut(a.Artifact.Image, "@")
	name = name[:strings.LastIndex(name, ":")]
	ev := &evidence.Record{SchemaVersion: evidence.SchemaVersion, App: a.App, Environment: a.Environment, PromotionID: rec.PromotionID,
		Decision: promotion.Accepted, Image: a.Artifact.Image, ArtifactDigest: a.Artifact.Digest, DesiredRevision: rev, ObservedRevision: rev,
		RenderedHash: hash, DesiredRenderedHash: hash, Time: time.Now().UTC().Truncate(time.Second), // after the desired commit
		Pods: []evidence.Pod{{Workload: "Deployment/" + a.App + "-" + a.Environment + "/" + a.App, Container: a.App, Pod: a.App + "-1", Pods: 1,
			Declared: a.Artifact.Digest, ImageID: name + "@" + a.Artifact.Digest, Outcome: "Verified", Match: "Exact"}},
		ReportedBy: evidence.Reporter{Source: "argocd"}}
	evData, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{promotion.RecordPath(a.App, a.Environment): recData, evFile: evData}
	signedevidence.SignAll(t, a.Notifier, files)
	for p, b := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
