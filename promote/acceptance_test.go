package promote

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/render"
)

// commitAcceptance commits production's Acceptance in its overlay on main,
// as `throughline render --write-acceptance` writes it (the Flux setup).
func (f *fixture) commitAcceptance() {
	t := f.t
	d, err := acceptance.Declare(context.Background(), acceptance.Request{
		Render: render.Options{Root: f.root, Path: filepath.Join(f.root, filepath.FromSlash(production))}, Environment: "production", Renderer: renderer})
	must(t, err)
	must(t, d.WriteFile())
	f.commit("production: the committed Acceptance (Flux)")
}

// checkAcceptanceAt is `throughline render --check-acceptance` of
// production at rev: why the committed Acceptance is stale ("" when not).
func (f *fixture) checkAcceptanceAt(rev string) string {
	t := f.t
	tree, err := f.repo.Tree(context.Background(), rev)
	must(t, err)
	defer func() { _ = tree.Close() }()
	d, err := acceptance.Declare(context.Background(), acceptance.Request{
		Render: tree.RenderOptions(production), Environment: "production", Renderer: "another-version"})
	must(t, err)
	return d.Stale()
}

// TestProposeRefreshesAcceptance: with a committed Acceptance in the
// target overlay, propose refreshes it in its commit (render
// --check-acceptance passes at the branch tip), and the PR gate accepts
// exactly that change: a committed Acceptance other than the fresh render
// of head, or one left stale, is refused.
func TestProposeRefreshesAcceptance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	accFile := production + "/" + acceptance.File
	for _, tc := range []struct {
		name   string
		change func(f *fixture, base string)
		want   string
	}{
		{"as proposed", nil, ""},
		{"left stale", func(f *fixture, base string) {
			f.write(map[string]string{accFile: base})
		}, "stale"},
		{"another rendered hash", func(f *fixture, _ string) {
			s := f.read(accFile)
			i := strings.Index(s, "renderedHash: sha256:")
			f.write(map[string]string{accFile: s[:i] + "renderedHash: sha256:" + strings.Repeat("0", 64) + s[i+len("renderedHash: sha256:")+64:]})
		}, "stale"},
		{"another namespace", func(f *fixture, _ string) {
			f.write(map[string]string{accFile: strings.Replace(f.read(accFile), "namespace: checkout-production", "namespace: checkout-staging", 1)})
		}, "is not the fresh render"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.unsignedApprovals() // signed approvals: approvals_test.go
			f.commitAcceptance()
			base := f.read(accFile)
			p := f.propose()
			if why := f.checkAcceptanceAt(p.Branch); why != "" {
				t.Fatalf("render --check-acceptance at the proposal: %s", why)
			}
			files := f.git("diff", "--name-only", "main", p.Branch)
			if files != strings.Join([]string{"gitops/" + production + "/kustomization.yaml", "gitops/" + accFile, "gitops/promotion/checkout/production.yaml"}, "\n") {
				t.Fatalf("the proposal changes:\n%s", files)
			}
			now := time.Now()
			_, err := Verify(ctx, f.repo, VerifyRequest{App: "checkout", To: "production", Now: now})
			must(t, err)
			_, err = Approve(ctx, f.repo, ApproveRequest{App: "checkout", To: "production", Approver: "alice", Expires: now.Add(time.Hour), Now: now, Renderer: renderer})
			must(t, err)
			if tc.change != nil {
				f.amend(p.Branch, func() { tc.change(f, base) })
			}
			rep := f.check(p.Branch, now)
			got := strings.Join(rules(rep), " ")
			switch {
			case tc.want == "" && (!rep.OK || got != ""):
				t.Fatalf("check of the proposal: %v\n%s", got, strings.Join(rep.Refusals, "\n"))
			case tc.want != "" && (got != gate.RuleAcceptance || !strings.Contains(strings.Join(rep.Refusals, "\n"), tc.want) ||
				rep.Findings[0].File != accFile):
				t.Fatalf("check: rules %v, want %s saying %q naming %s:\n%s", got, gate.RuleAcceptance, tc.want, accFile, strings.Join(rep.Refusals, "\n"))
			}
		})
	}
}

// TestRollbackRefreshesAcceptance: a rollback refreshes the committed
// Acceptance in its commit too, and the gate accepts it.
func TestRollbackRefreshesAcceptance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, _ := newRollbackFixture(t)
	d, err := acceptance.Declare(ctx, acceptance.Request{
		Render: render.Options{Root: f.root, Path: filepath.Join(f.root, filepath.FromSlash(webOverlay))}, Environment: "production", Renderer: renderer})
	must(t, err)
	must(t, d.WriteFile())
	f.commit("production: the committed Acceptance (Flux)")
	res, err := Rollback(ctx, f.repo, RollbackRequest{App: "web", Env: "production", To: ledger.Previous, Path: webOverlay, Renderer: renderer,
		Exists: func(context.Context, string) (bool, error) { return true, nil }})
	must(t, err)
	tree, err := f.repo.Tree(ctx, res.Proposal.Branch)
	must(t, err)
	defer func() { _ = tree.Close() }()
	at, err := acceptance.Declare(ctx, acceptance.Request{Render: tree.RenderOptions(webOverlay), Environment: "production"})
	must(t, err)
	if why := at.Stale(); why != "" {
		t.Fatalf("render --check-acceptance at the rollback: %s", why)
	}
	if rep := f.check(res.Proposal.Branch, time.Now()); strings.Join(rules(rep), " ") != gate.RuleNotApproved {
		t.Fatalf("check of the rollback: %v %q", rules(rep), rep.Refusals)
	}
}
