package delivery

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/benchfixture"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/signedevidence"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/promotion"
)

// benchRepo is a repository of apps apps in three environments, each
// promoted rounds times (one commit per round of every record ACCEPTED
// and its evidence, signed by the notifier the policy's evidenceSigners
// lists), read in process.
func benchRepo(b *testing.B, apps, rounds int) *gitops.Repo {
	b.Helper()
	dir := b.TempDir()
	// A local exec, not gittest.Run: each commit has its own date (the
	// rounds are an hour apart), in gittest's environment.
	git := func(date time.Time, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		d := date.Format(time.RFC3339)
		cmd.Env = gittest.Env(dir, "GIT_AUTHOR_DATE="+d, "GIT_COMMITTER_DATE="+d)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(p string, data []byte) { gittest.Write(b, dir, map[string]string{p: string(data)}) }
	envs := []string{"qa", "staging", "production"}
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	n := sshkey.NewNotifier(b, envs...)
	policy := "apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\nenvironments:\n"
	for _, e := range envs {
		policy += fmt.Sprintf("  %s:\n    cluster: %s\n    paths: [\"apps/*/overlays/%s\"]\n", e, e, e)
	}
	write(promotion.PolicyFile, []byte(policy+sshkey.PolicyLine))
	write(sshkey.EvidenceSignersFile, []byte(n.Line()))
	git(t0, "init", "-q", "-b", "main")
	git(t0, "add", "-A")
	git(t0, "commit", "-q", "-m", "start")
	for round := range rounds {
		at := t0.Add(time.Duration(round) * time.Hour)
		desired := git(at, "rev-parse", "HEAD")
		d := "sha256:" + strings.Repeat(fmt.Sprintf("%02x", round), 32)
		for i := range apps {
			for _, e := range envs {
				rec, ev := benchAttempt(b, fmt.Sprintf("app%03d", i), e, d, desired, at)
				write(promotion.RecordPath(rec.App, e), must(rec.Marshal()))
				file, data := evidence.Path(e, rec.App, rec.PromotionID), must(ev.Marshal())
				write(file, data)
				write(evidence.SignaturePath(file), signedevidence.Sign(b, n, data))
			}
		}
		git(at.Add(30*time.Minute), "add", "-A")
		git(at.Add(30*time.Minute), "commit", "-q", "-m", fmt.Sprintf("round %d", round))
	}
	git(t0, "repack", "-a", "-d", "-q")
	r, err := gitops.OpenLocal(context.Background(), dir)
	if err == nil {
		err = r.ReadInProcess()
	}
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func must(data []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return data
}

// benchAttempt is an ACCEPTED attempt and its evidence.
func benchAttempt(b *testing.B, app, env, d, desired string, at time.Time) (*promotion.Record, *evidence.Record) {
	h := "sha256:" + strings.Repeat("1", 64)
	rec, err := promotion.NewCandidate(app, 1, promotion.Artifact{Image: "r.example/app:1@" + d, Digest: d, SourceCommit: strings.Repeat("2", 40)},
		promotion.Target{Environment: env, Path: "apps/" + app + "/overlays/" + env, Cluster: env, RenderedHash: h, BaseRenderedHash: h,
			Renderer: "v1"}, at.Add(-time.Hour), "bench")
	if err == nil {
		err = devVerified(rec, at.Add(-50*time.Minute))
	}
	if err == nil {
		err = rec.Approve("alice", rec.InputFor("v1"), at.Add(time.Hour), at.Add(-40*time.Minute))
	}
	if err == nil {
		err = rec.Reconcile(desired, at.Add(time.Minute), "bench")
	}
	verified := at.Add(20 * time.Minute)
	if err == nil {
		err = rec.Accept(desired, evidence.Path(env, app, rec.PromotionID), verified.Add(time.Minute), "bench")
	}
	if err != nil {
		b.Fatal(err)
	}
	ev := &evidence.Record{SchemaVersion: evidence.SchemaVersion, App: app, Environment: env, PromotionID: rec.PromotionID,
		Decision: promotion.Accepted, Image: rec.Artifact.Image, ArtifactDigest: d, DesiredRevision: desired, ObservedRevision: desired,
		VerifiedAt: &verified, Time: verified.Add(time.Minute), ReportedBy: evidence.Reporter{Source: "argocd"},
		Pods: []evidence.Pod{{Workload: "Deployment/" + app + "/" + app, Container: "app", Pod: app + "-5f7c9d8b6-x2k4p", Pods: 1, Declared: d,
			ImageID: "r.example/app@" + d, Outcome: "Verified", Match: "Exact", Platform: "linux/amd64"}}}
	return rec, ev
}

// BenchmarkDeliveryRead: 100 apps in 3 environments promoted 5 times
// (1,500 attempts, 1,500 record versions, 1,500 evidence files). fresh is
// promote status --since (a new reader), again what serve does when the
// branch moved (the record versions and commit times remembered).
func BenchmarkDeliveryRead(b *testing.B) {
	const apps, rounds = 100, 5
	repo := benchRepo(b, apps, rounds)
	ctx := context.Background()
	check := func(rep *Report, err error) {
		if err != nil || len(rep.Apps) != apps*3 || rep.Invalid != 0 || rep.Apps[0].Attempts != rounds {
			b.Fatalf("%v: %d pairs, invalid %d: %+v", err, len(rep.Apps), rep.Invalid, rep.Problems[:min(len(rep.Problems), 2)])
		}
	}
	b.Run("fresh", func(b *testing.B) {
		cpu := benchfixture.CPUNow()
		for b.Loop() {
			check(Read(ctx, repo, Options{}))
		}
		benchfixture.ReportCPU(b, cpu)
	})
	b.Run("again", func(b *testing.B) {
		rd := &Reader{Repo: repo}
		check(rd.Read(ctx, Options{}))
		cpu := benchfixture.CPUNow()
		for b.Loop() {
			check(rd.Read(ctx, Options{}))
		}
		benchfixture.ReportCPU(b, cpu)
	})
}
