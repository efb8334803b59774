package chainview

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/benchfixture"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/promotion"
)

// benchEnvs are the four environments of the benchmark repository.
var benchEnvs = []string{"dev", "qa", "staging", "production"}

// benchRepo is a repository of apps apps in the four environments: one
// commit of overlays (and the policy, whose evidenceSigners lists a
// notifier's key), one of an ACCEPTED record per app and environment.
func benchRepo(b *testing.B, apps int) *gitops.Repo {
	b.Helper()
	dir := b.TempDir()
	git := func(args ...string) string { return gittest.Run(b, dir, args...) }
	write := func(p string, data []byte) { gittest.Write(b, dir, map[string]string{p: string(data)}) }
	policy := "apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\nenvironments:\n"
	for _, e := range benchEnvs {
		policy += fmt.Sprintf("  %s:\n    cluster: %s-1\n    paths: [\"apps/*/overlays/%s\"]\n", e, e, e)
	}
	write(promotion.PolicyFile, []byte(policy+sshkey.PolicyLine))
	write(sshkey.EvidenceSignersFile, []byte(sshkey.NewNotifier(b, benchEnvs...).Line()))
	d := benchfixture.Digest(0)
	for i := range apps {
		for _, e := range benchEnvs {
			write(fmt.Sprintf("apps/app%03d/overlays/%s/kustomization.yaml", i, e), []byte("images:\n  - name: r.example/app\n    newTag: \"1.0.0@"+d+"\"\n"))
		}
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "overlays")
	desired := git("rev-parse", "HEAD")
	t0 := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	for i := range apps {
		for _, e := range benchEnvs {
			write(promotion.RecordPath(fmt.Sprintf("app%03d", i), e), benchRecord(b, fmt.Sprintf("app%03d", i), e, d, desired, t0))
		}
	}
	git("add", "-A")
	git("commit", "-q", "-m", "records")
	git("repack", "-a", "-d", "-q") // packed, as a clone is
	r, err := gitops.OpenLocal(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func benchRecord(b *testing.B, app, env, d, desired string, t0 time.Time) []byte {
	h := "sha256:" + strings.Repeat("1", 64)
	rec, err := promotion.NewCandidate(app, 1, promotion.Artifact{Image: "r.example/app:1.0.0@" + d, Digest: d, SourceCommit: strings.Repeat("2", 40)},
		promotion.Target{Environment: env, Path: "apps/" + app + "/overlays/" + env, Cluster: env + "-1", RenderedHash: h, BaseRenderedHash: h,
			Renderer: "v1"}, t0, "bench")
	if err == nil {
		err = rec.Verify(promotion.VerifiedIn{Environment: "ci", DesiredRevision: desired, ObservedRevision: desired, RenderedHash: h,
			RuntimeEvidence: "evidence/dev/x.json"}, t0, "bench")
	}
	if err == nil {
		err = rec.Approve("alice", rec.InputFor("v1"), t0.Add(time.Hour), t0)
	}
	if err == nil {
		err = rec.Reconcile(desired, t0, "bench")
	}
	if err == nil {
		err = rec.Accept(desired, evidence.Path(env, app, rec.PromotionID), t0, "bench")
	}
	if err != nil {
		b.Fatal(err)
	}
	data, err := rec.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkGrid: 200 apps in 4 environments. render is the grid page from
// the model (what the served view does per request while the branch does
// not move), served the same through the Handler; load-grid reads the
// grid from Git (800 records, each read by git), load-chains judges every
// chain too (what report and the Handler do once per move of the branch).
func BenchmarkGrid(b *testing.B) {
	const apps = 200
	repo := benchRepo(b, apps)
	ctx := context.Background()
	m, err := LoadGrid(ctx, repo, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if len(m.Apps) != apps || len(m.Environments) != len(benchEnvs) || len(m.Problems) != 0 {
		b.Fatalf("%d apps, environments %v, problems %v", len(m.Apps), m.Environments, m.Problems)
	}
	b.Run("render", func(b *testing.B) {
		site, err := NewSite(m)
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		cpu := benchfixture.CPUNow()
		for b.Loop() {
			buf.Reset()
			if err := site.Index(&buf); err != nil {
				b.Fatal(err)
			}
		}
		benchfixture.ReportCPU(b, cpu)
		if n := strings.Count(buf.String(), "<th scope=\"row\">"); n != apps {
			b.Fatalf("%d rows, want %d", n, apps)
		}
		b.ReportMetric(float64(buf.Len()), "bytes/page")
	})
	b.Run("served", func(b *testing.B) {
		h := &Handler{Repo: repo, TTL: time.Hour}
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/index.html", nil)) // the first request loads
		cpu := benchfixture.CPUNow()
		for b.Loop() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/index.html", nil))
			if rec.Code != 200 {
				b.Fatalf("status %d", rec.Code)
			}
			_, _ = io.Copy(io.Discard, rec.Body)
		}
		benchfixture.ReportCPU(b, cpu)
	})
	// The reads through git (one process each) and in process
	// (gitrepo.Repo.ReadInProcess, what report and serve use).
	fast := *repo.Repo
	if err := fast.ReadInProcess(); err != nil {
		b.Fatal(err)
	}
	for _, rd := range []struct {
		name string
		repo *gitops.Repo
	}{{"git", repo}, {"in-process", &gitops.Repo{Repo: &fast, Base: repo.Base}}} {
		b.Run("load-grid/"+rd.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := LoadGrid(ctx, rd.repo, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("load-chains/"+rd.name, func(b *testing.B) {
			for b.Loop() {
				if m, err := Load(ctx, rd.repo, Options{}); err != nil || len(m.Promotions) != apps*len(benchEnvs) {
					b.Fatalf("%v", err)
				}
			}
		})
	}
}
