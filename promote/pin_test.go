package promote

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/promotion"
)

// TestReconcileMovesPin (issue 32): production's binding is pinned, its
// Application names a commit. promote reconcile moves the pin to the
// commit it records as desired, in the same commit as the RECONCILING
// record (Argo CD then syncs exactly that commit), keeping the file's
// comments and the Application's other fields; the every-PR check finds
// the pin and the record in agreement, and refuses a pull request that
// moves the pin back.
func TestReconcileMovesPin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.unsignedApprovals()
	app := "clusters/production/checkout.yaml"
	before := f.git("rev-parse", "HEAD")
	f.replace("throughline-policy.yaml", "      targetRevision: main\n      server: https://kubernetes.default.svc\n      project: production",
		"      targetRevision: main\n      pinned: true\n      server: https://kubernetes.default.svc\n      project: production")
	for _, a := range []string{app, "clusters/production/storefront.yaml"} {
		f.replace(a, "targetRevision: main", "targetRevision: "+before)
	}
	f.commit("production pinned")
	now := time.Now()
	p := f.approved(now)
	f.git("merge", "-q", "--no-edit", p.Branch)
	// Records on another branch would leave the pin behind: refused, nothing
	// written there.
	f.git("branch", "records", "main")
	recordsTip := f.git("rev-parse", "records")
	record := errorLines(t, "testdata/reconcile-pinned.golden", 1)
	_, _, err := Reconcile(ctx, f.repo, ReconcileRequest{App: "checkout", To: "production", RecordsBranch: "records", Now: now, By: "test",
		Renderer: renderer})
	if exitcode.Code(err) != exitcode.Usage {
		t.Fatalf("reconcile of a pinned environment on a records branch: exit %d: %v", exitcode.Code(err), err)
	}
	record("records branch of a pinned environment", err) // "is pinned"
	if tip := f.git("rev-parse", "records"); tip != recordsTip {
		t.Fatalf("the refused reconcile moved the records branch")
	}
	tr, rev, err := Reconcile(ctx, f.repo, ReconcileRequest{App: "checkout", To: "production", Now: now, By: "test", Renderer: renderer})
	must(t, err)
	if tr.Record.State != promotion.Reconciling || tr.Record.Reconciling.DesiredRevision != rev {
		t.Fatalf("record %s desired %+v, want RECONCILING %s", tr.Record.State, tr.Record.Reconciling, rev)
	}
	// One commit: the record and the pin.
	changed := strings.Fields(f.git("show", "--name-only", "--format=", tr.Commit))
	if strings.Join(changed, " ") != "gitops/"+app+" gitops/"+promotion.RecordPath("checkout", "production") {
		t.Fatalf("reconcile commit changes %q, want the Application and the record", changed)
	}
	got := f.git("show", tr.Commit+":gitops/"+app)
	if !strings.Contains(got, "targetRevision: "+rev) || strings.Contains(got, before) {
		t.Fatalf("the pin did not move to %s:\n%s", rev, got)
	}
	if !strings.Contains(got, "# Argo CD Application") || !strings.Contains(got, "name: throughline-v1") {
		t.Fatalf("the Application lost its comments or fields:\n%s", got)
	}
	if sf := f.git("show", tr.Commit+":gitops/clusters/production/storefront.yaml"); !strings.Contains(sf, "targetRevision: "+before) {
		t.Fatalf("storefront's pin moved with checkout's:\n%s", sf)
	}

	// The every-PR check: pin and record agree; moving the pin back is
	// refused (and, production being protected, needs its approvals).
	f.git("checkout", "-q", "-B", "main", tr.Commit)
	f.git("checkout", "-q", "-b", "readme", "main")
	f.write(map[string]string{"README.md": "hello\n"})
	f.commit("readme")
	f.git("checkout", "-q", "-b", "back", "main")
	f.replace(app, "targetRevision: "+rev, "targetRevision: "+before)
	f.commit("production back to the commit before")
	f.git("checkout", "-q", "main")
	if rep := f.checkRepo("readme", now); !rep.OK || len(rep.Preexisting) != 0 {
		t.Fatalf("a README change after reconcile: %q, preexisting %+v", rep.Refusals, rep.Preexisting)
	}
	rep := f.checkRepo("back", now)
	found := false
	for _, fd := range rep.Findings {
		found = found || fd.Rule == gate.RuleController && strings.Contains(fd.Reason, "is not the desired revision of "+promotion.RecordPath("checkout", "production"))
	}
	if !found {
		t.Fatalf("moving the pin back is not refused: %q", rep.Refusals)
	}
}

// replace replaces the one occurrence of old by repl in the root-relative
// file p.
func (f *fixture) replace(p, old, repl string) {
	f.t.Helper()
	gittest.Replace(f.t, f.root, p, old, repl)
}
