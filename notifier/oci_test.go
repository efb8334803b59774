package notifier

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/promotion"
)

var (
	ociDesired = "sha256:" + strings.Repeat("e1", 32)
	ociOther   = "sha256:" + strings.Repeat("f2", 32)
)

// ociLab is a GitOps repository whose main branch holds checkout's
// production record RECONCILING: desiring the OCI artifact ociDesired
// built from commit desired (oci), or the commit desired itself (Git; the
// repository in SHA-256 mode when sha256). earlier is an ancestor of
// desired, later the records commit after it.
type ociLab struct {
	proc                    *Processor
	earlier, desired, later string
}

func newOCILab(t *testing.T, oci, sha256 bool, registry bool) *ociLab {
	t.Helper()
	base := t.TempDir()
	origin, seed := filepath.Join(base, "origin.git"), filepath.Join(base, "seed")
	format := "--object-format=sha1"
	if sha256 {
		format = "--object-format=sha256"
	}
	gittest.Run(t, base, "init", "-q", "--bare", format, "-b", "main", origin)
	gittest.Run(t, base, "init", "-q", format, "-b", "main", seed)
	gittest.Run(t, seed, "remote", "add", "origin", origin)
	lab := &ociLab{}
	for i, rev := range []*string{&lab.earlier, &lab.desired} {
		*rev = gittest.Commit(t, seed, "overlay", map[string]string{
			"apps/checkout/overlays/production/kustomization.yaml": "images: [{name: x, digest: " + digest + "}]\n# " + string(rune('a'+i)) + "\n"})
	}
	rec := reconcilingOCI(t, oci, lab.desired)
	y, err := rec.Marshal()
	must(t, err)
	lab.later = gittest.Commit(t, seed, "records", map[string]string{promotion.RecordPath("checkout", "production"): string(y)})
	gittest.Run(t, seed, "push", "-q", "origin", "main")
	work := filepath.Join(base, "work")
	gittest.Run(t, base, "clone", "-q", origin, work)
	r, err := gitrepo.Open(context.Background(), work)
	must(t, err)
	r.Env = []string{"HOME=" + base, "GIT_CONFIG_NOSYSTEM=1"}
	live := &fakeLive{m: map[string]*Live{"checkout": verified("checkout")}}
	lab.proc = &Processor{Git: &evidence.GitSink{Repo: r, Branch: "main", Attempts: 5}, Live: live,
		Now: func() time.Time { return t0.Add(time.Hour) }}
	if registry {
		reg := ociRegistry(t, oci)
		lab.proc.Registry = func(context.Context) (*environment.Registry, error) { return reg, nil }
	}
	return lab
}

// reconcilingOCI is checkout's production record RECONCILING: the
// artifact ociDesired built from commit (oci), or commit (Git).
func reconcilingOCI(t *testing.T, oci bool, commit string) *promotion.Record {
	t.Helper()
	if !oci {
		return reconciling(t, "checkout", commit)
	}
	tg := promotion.Target{Environment: "production", Path: "apps/checkout/overlays/production", Cluster: "prod",
		RenderedHash: hashA, BaseRenderedHash: hashB, Renderer: "v0.1.0"}
	r, err := promotion.NewCandidate("checkout", 1, promotion.Artifact{Image: "ghcr.io/x/checkout:1@" + digest, Digest: digest, SourceCommit: srcRev}, tg, t0, "ci")
	must(t, err)
	must(t, r.Verify(promotion.VerifiedIn{Environment: "staging", DesiredRevision: stgRev, ObservedRevision: stgRev, RenderedHash: hashB,
		RuntimeEvidence: "evidence/staging/checkout/x.json"}, t0.Add(time.Minute), "notifier"))
	must(t, r.Approve("alice", r.InputFor("v0.1.0"), t0.Add(24*time.Hour), t0.Add(2*time.Minute)))
	must(t, r.ReconcileOCI(ociDesired, commit, t0.Add(3*time.Minute), "ci"))
	return r
}

// ociRegistry declares production's source OCI (oci) or Git, staging's
// the other one.
func ociRegistry(t *testing.T, oci bool) *environment.Registry {
	t.Helper()
	src := &v1alpha1.SourcePolicy{OCI: &v1alpha1.OCISourcePolicy{Repository: "registry.example/gitops/checkout", Tag: "production"}}
	prod := v1alpha1.EnvironmentPolicy{Paths: []string{"apps/*/overlays/production"}}
	stg := v1alpha1.EnvironmentPolicy{Paths: []string{"apps/*/overlays/staging"}}
	if oci {
		prod.Source = src
	} else {
		stg.Source = src
	}
	reg, err := environment.New("throughline-policy.yaml", &v1alpha1.PromotionPolicy{Environments: map[string]v1alpha1.EnvironmentPolicy{
		"production": prod, "staging": stg}})
	must(t, err)
	return reg
}

// fluxOCIBody is a Flux event about checkout in production at rev, with
// originRevision origin when set.
func fluxOCIBody(t *testing.T, rev, origin string) []byte {
	t.Helper()
	md := map[string]string{FluxMetaRevision: rev, "app": "checkout", "environment": "production"}
	if origin != "" {
		md[FluxMetaOriginRevision] = origin
	}
	b, err := json.Marshal(eventv1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: "Kustomization", Namespace: "flux-system", Name: "checkout"},
		Severity:       "info", Reason: "ReconciliationSucceeded", Metadata: md, ReportingController: "kustomize-controller",
	})
	must(t, err)
	return b
}

func argoOCIBody(rev string) []byte {
	b, _ := json.Marshal(ArgoCDPayload{Trigger: "on-deployed", Application: "checkout", Namespace: "argocd", Environment: "production",
		Revision: rev, SyncStatus: "Synced", Phase: "Succeeded", Health: "Healthy"})
	return b
}

// TestOCISources: Flux OCIRepository and Argo CD OCI revisions through the
// notifier, attacked first: a Git SHA-256 revision mistaken for OCI, an
// OCI revision for a Git environment, a tag without digest, a digest of
// another artifact, an artifact whose revision annotation names another
// commit.
func TestOCISources(t *testing.T) {
	t.Parallel()
	hexOf := func(d string) string { return strings.TrimPrefix(d, "sha256:") }
	type outcome struct {
		decision promotion.State // "" : waited for (WaitError)
		text     string          // in the reason or the wait
		observed string          // the evidence's observedRevision (ACCEPTED)
	}
	tests := []struct {
		name             string
		oci, sha256, reg bool
		argo             bool
		body             func(l *ociLab) []byte
		want             outcome
	}{
		{"flux oci: the desired artifact built from the desired commit", true, false, true, false,
			func(l *ociLab) []byte { return fluxOCIBody(t, "production@"+ociDesired, "main@sha1:"+l.desired) },
			outcome{promotion.Accepted, "", ociDesired}},
		{"flux oci: the desired artifact, no origin reported", true, false, true, false,
			func(*ociLab) []byte { return fluxOCIBody(t, "production@"+ociDesired, "") }, outcome{promotion.Accepted, "", ociDesired}},
		{"flux oci without a registry: the origin says OCI", true, false, false, false,
			func(l *ociLab) []byte { return fluxOCIBody(t, "production@"+ociDesired, l.desired) }, outcome{promotion.Accepted, "", ociDesired}},
		{"argo cd oci: the desired digest", true, false, true, true,
			func(*ociLab) []byte { return argoOCIBody(ociDesired) }, outcome{promotion.Accepted, "", ociDesired}},
		{"attack: the desired digest, its annotation names another commit", true, false, true, false,
			func(l *ociLab) []byte { return fluxOCIBody(t, "production@"+ociDesired, "main@sha1:"+l.earlier) },
			outcome{promotion.Halted, "names commit " + "%earlier", ""}},
		{"attack: a digest of another artifact built from the desired commit", true, false, true, false,
			func(l *ociLab) []byte { return fluxOCIBody(t, "production@"+ociOther, "main@sha1:"+l.desired) },
			outcome{promotion.Halted, "another digest is another artifact", ""}},
		{"attack: a digest of an artifact built from a later commit", true, false, true, false,
			func(l *ociLab) []byte { return fluxOCIBody(t, "production@"+ociOther, "main@sha1:"+l.later) },
			outcome{promotion.Halted, "not the desired commit", ""}},
		{"attack: argo cd reports another digest", true, false, true, true,
			func(*ociLab) []byte { return argoOCIBody(ociOther) }, outcome{"", "reports no revision it was built from", ""}},
		{"an artifact built from an earlier commit: waited for", true, false, true, false,
			func(l *ociLab) []byte { return fluxOCIBody(t, "production@"+ociOther, "main@sha1:"+l.earlier) },
			outcome{"", "an ancestor of the desired", ""}},
		{"attack: a git revision for an oci environment", true, false, true, false,
			func(l *ociLab) []byte { return fluxOCIBody(t, "main@sha1:"+l.desired, "") }, outcome{promotion.Halted, "wrong source", ""}},
		{"attack: the oci form without a registry or origin reads as git", true, false, false, false,
			func(*ociLab) []byte { return fluxOCIBody(t, "production@"+ociDesired, "") }, outcome{promotion.Halted, "wrong source", ""}},
		{"attack: a git sha-256 commit is not mistaken for oci", false, true, true, false,
			func(l *ociLab) []byte { return fluxOCIBody(t, "main@sha256:"+l.desired, "") }, outcome{promotion.Accepted, "", "%desired"}},
		{"git sha-256 without a registry", false, true, false, false,
			func(l *ociLab) []byte { return fluxOCIBody(t, "main@sha256:"+l.desired, "") }, outcome{promotion.Accepted, "", "%desired"}},
		{"attack: an oci revision for a git environment", false, true, true, false,
			func(l *ociLab) []byte {
				return fluxOCIBody(t, "production@sha256:"+hexOf(ociDesired), "main@sha256:"+l.desired)
			},
			outcome{promotion.Halted, "wrong source", ""}},
		{"attack: an oci artifact of the desired commit's id for a git environment", false, true, true, false,
			func(l *ociLab) []byte {
				return fluxOCIBody(t, "production@sha256:"+l.desired, "main@sha256:"+l.desired)
			},
			outcome{promotion.Halted, "the environment's source is Git", ""}},
		{"attack: argo cd oci digest for a git environment", false, true, true, true,
			func(l *ociLab) []byte { return argoOCIBody("sha256:" + l.desired) }, outcome{promotion.Halted, "wrong source", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := newOCILab(t, tt.oci, tt.sha256, tt.reg)
			decode := decodeFlux
			if tt.argo {
				decode = decodeArgoCD
			}
			ev, err := decode(tt.body(l))
			must(t, err)
			w, err := l.proc.Process(context.Background(), ev)
			text := strings.ReplaceAll(tt.want.text, "%earlier", l.earlier)
			if tt.want.decision == "" {
				var wait *WaitError
				if !errors.As(err, &wait) || !strings.Contains(wait.Reason, text) {
					t.Fatalf("got %v, want a wait saying %q", err, text)
				}
				return
			}
			must(t, err)
			got := w.Evidence
			if got.Decision != tt.want.decision || !strings.Contains(got.Reason, text) {
				t.Fatalf("decision %s (%s), want %s saying %q", got.Decision, got.Reason, tt.want.decision, text)
			}
			if want := strings.ReplaceAll(tt.want.observed, "%desired", l.desired); want != "" && got.ObservedRevision != want {
				t.Fatalf("observedRevision %s, want %s", got.ObservedRevision, want)
			}
			if tt.oci && got.DesiredCommit != l.desired {
				t.Errorf("desiredCommit %q, want %s", got.DesiredCommit, l.desired)
			}
		})
	}
}

// TestParseRevision: the forms controllers report, and what is refused.
func TestParseRevision(t *testing.T) {
	t.Parallel()
	c1, c2, d := strings.Repeat("a", 40), strings.Repeat("b", 64), strings.Repeat("e", 64)
	for _, tc := range []struct {
		rev, git, oci string
		ok            bool
	}{
		{"main@sha1:" + c1, c1, "", true},
		{"main@sha256:" + c2, c2, "sha256:" + c2, true},
		{"production@sha256:" + d, d, "sha256:" + d, true},
		{"v1.2.3@sha256:" + d, d, "sha256:" + d, true},
		{"sha256:" + d, d, "sha256:" + d, true},
		{"sha1:" + c1, c1, "", true},
		{"main/" + c1, c1, "", true},
		{c1, c1, "", true},
		{c2, c2, "", true},
		{"production", "", "", false},                 // a tag without digest
		{"production@", "", "", false},                // a tag, empty digest
		{"production@sha512:" + d + d, "", "", false}, // another algorithm
		{"main@sha1:" + c2, "", "", false},            // sha1 with 64 hex
		{"main@sha256:" + c1, "", "", false},          // sha256 with 40 hex
		{"@sha256:" + d, "", "", false},
		{"a@b@sha256:" + d, "", "", false},
		{"main@sha1:" + strings.ToUpper(c1), "", "", false},
		{"sha256:" + d[:12], "", "", false},
	} {
		git, oci, ok := parseRevision(tc.rev)
		if git != tc.git || oci != tc.oci || ok != tc.ok {
			t.Errorf("parseRevision(%q) = %q %q %t, want %q %q %t", tc.rev, git, oci, ok, tc.git, tc.oci, tc.ok)
		}
	}
	if _, err := decodeFlux(fluxOCIBody(t, "production", "")); !errors.Is(err, ErrMalformed) {
		t.Errorf("flux: a tag without digest: %v, want malformed", err)
	}
	if _, err := decodeArgoCD(argoOCIBody("production")); !errors.Is(err, ErrMalformed) {
		t.Errorf("argocd: a tag without digest: %v, want malformed", err)
	}
	if _, err := decodeArgoCD(argoOCIBody("main@sha1:" + c1)); !errors.Is(err, ErrMalformed) {
		t.Errorf("argocd: a Flux-style revision: %v, want malformed", err)
	}
	if _, err := decodeFlux(fluxOCIBody(t, "production@sha256:"+d, "main")); !errors.Is(err, ErrMalformed) {
		t.Errorf("flux: an origin revision naming no commit: %v, want malformed", err)
	}
}
