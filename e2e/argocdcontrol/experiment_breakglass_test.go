//go:build e2e

package argocdcontrol

import (
	"encoding/json"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/breakglass"
	"github.com/throughline-dev/throughline/internal/testenv"
)

const memoryPath = `spec.template.spec.containers[{"name":"api"}].resources.limits.memory`

// breakGlass is experiment 5 against the real application controller with
// self-heal on: throughline breakglass pause removes production's automated
// sync; an operator patches the Deployment live (kubectl patch: a memory
// limit); the controller sees the drift (OutOfSync) but
// self-heal does not revert it while paused; breakglass writeback proposes
// the limit as a patch in the overlay; the branch is merged; resume turns
// automated sync back on and watches for flapping; then the controller is
// Synced and Healthy at main (which contains the write-back), with the
// limit live, and no sync loop: its history and last operation stay put
// over a window with a refresh.
func (e *env) breakGlass(run chainRun) {
	p := e.production()
	kc, err := e.api.Kubeconfig("operator", "")
	must(e.t, err)
	dir := e.clone()
	bg := func(args ...string) testenv.CLIResult {
		e.t.Helper()
		return e.cli(run.isolated, append(args, "--repo", dir, "--app", "checkout", "--env", "production", "--operator", "alice", "--kubeconfig", kc)...)
	}
	automated := func(u *unstructured.Unstructured) bool {
		_, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "syncPolicy", "automated")
		return found
	}
	if r := bg("breakglass", "pause", "--ticket", "INC-7", "--expires", "1h"); r.Code != 0 || automated(p.app()) {
		e.t.Fatalf("arrow pause -> automated sync removed: exit %d (automated %t)\n%s%s", r.Code, automated(p.app()), r.Stdout, r.Stderr)
	}
	before := p.app()
	hist := history(before)
	lastSync := str(before, "status", "operationState", "syncResult", "revision")

	// The operator's live fix (kubectl patch: field manager kubectl-patch),
	// and the deployment controller rolling it out.
	fix := client.RawPatch(types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"api","resources":{"limits":{"memory":"2Gi"}}}]}}}}`))
	must(e.t, e.c.Patch(e.ctx, p.deployment(), fix, client.FieldOwner("kubectl-patch")))
	live := imageOf(p.deployment())
	live = live[strings.LastIndex(live, "@")+1:] // the digest production runs (B, after experiment 7)
	p.rollout(p.deployment(), "bg1", live)
	p.refresh("normal")
	p.waitApp("live patch while paused -> OutOfSync", time.Minute, func(u *unstructured.Unstructured) bool {
		return str(u, "status", "sync", "status") == "OutOfSync"
	})
	time.Sleep(3 * time.Second) // self-heal, were it on, would have synced by now
	u := p.app()
	if mem := memoryLimit(p); mem != "2Gi" || history(u) != hist || str(u, "status", "operationState", "syncResult", "revision") != lastSync {
		e.t.Fatalf("arrow paused -> self-heal does not revert the live fix: memory %q, history %d (was %d), last sync %.12s (was %.12s)",
			mem, history(u), hist, str(u, "status", "operationState", "syncResult", "revision"), lastSync)
	}

	wb := bg("breakglass", "writeback", "-o", "json")
	var out struct {
		Changes []breakglass.Change `json:"changes"`
		Branch  string              `json:"branch"`
	}
	if wb.Code != 0 || json.Unmarshal([]byte(wb.Stdout), &out) != nil || !hasPermanent(out.Changes, memoryPath) {
		e.t.Fatalf("arrow live fix -> write-back of the memory limit (permanent): exit %d\n%s%s", wb.Code, wb.Stdout, wb.Stderr)
	}
	// The forge merges the write-back PR.
	e.in(dir, "fetch", "-q", "origin")
	e.in(dir, "merge", "-q", "--ff-only", "origin/main")
	e.in(dir, "merge", "-q", "--no-ff", "-m", "Merge "+out.Branch, "origin/"+out.Branch)
	e.in(dir, "push", "-q", "origin", "HEAD:main")
	wbMerge := e.in(dir, "rev-parse", "HEAD")

	if r := bg("breakglass", "resume", "--observe", "5s"); r.Code != 0 || !automated(p.app()) {
		e.t.Fatalf("arrow write-back merged -> resume, automated sync back, no flapping: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	e.git("pull", "-q", "--ff-only", "origin", "main")
	tip := e.head()
	e.in(dir, "merge-base", "--is-ancestor", wbMerge, tip)
	p.refresh("normal")
	u = p.comparedAt("resumed -> Synced at main (the write-back merged)", tip)
	// The deployment controller (played) catches up with a spec the sync
	// of the write-back changed.
	if d := p.deployment(); d.Status.ObservedGeneration != d.Generation {
		e.t.Logf("the write-back's sync moved the Deployment to generation %d (resource health %q)", d.Generation,
			resourceHealth(u, "Deployment", "checkout"))
		p.rollout(d, "bg2", live)
	}
	for deadline := time.Now().Add(30 * time.Second); str(u, "status", "health", "status") != "Healthy"; u = p.app() {
		if time.Now().After(deadline) {
			rs, _, _ := unstructured.NestedSlice(u.Object, "status", "resources")
			e.t.Fatalf("arrow resumed -> app Healthy: %s; resources %v", summary(u), rs)
		}
		time.Sleep(250 * time.Millisecond)
	}
	p.waitHealthy("resumed -> app Healthy")
	if mem := memoryLimit(p); mem != "2Gi" {
		e.t.Fatalf("arrow write-back merged -> the fix stays live: memory %q", mem)
	}
	p.noSyncLoop()
	rec, err := breakglass.Parse("record", []byte(e.in(dir, "show", tip+":"+breakglass.Path("production", "checkout"))))
	must(e.t, err)
	if rec.State != breakglass.Resumed || rec.Resume == nil || len(rec.Resume.Flapping) != 0 || rec.Resume.WritebackMerged == "" {
		e.t.Fatalf("arrow resume -> break-glass record: %s %+v", rec.State, rec.Resume)
	}
	e.t.Logf("break-glass: paused, fixed live, not reverted, written back (%s), merged %.12s, resumed: Synced and Healthy at %.12s, no loop",
		out.Branch, wbMerge, tip)
}

// noSyncLoop watches the Application over a few seconds and a refresh:
// no new history entry, no new sync operation, the Deployment's generation
// unchanged, Synced and Healthy.
func (e *env) noSyncLoop() {
	e.t.Helper()
	u := e.app()
	hist, started := history(u), str(u, "status", "operationState", "startedAt")
	gen := e.deployment().Generation
	time.Sleep(3 * time.Second)
	e.refresh("normal")
	time.Sleep(3 * time.Second)
	u = e.app()
	if history(u) != hist || str(u, "status", "operationState", "startedAt") != started || e.deployment().Generation != gen ||
		str(u, "status", "sync", "status") != "Synced" || str(u, "status", "health", "status") != "Healthy" {
		e.t.Fatalf("arrow resumed -> no sync loop: history %d (was %d), operation started %s (was %s), Deployment generation %d (was %d): %s",
			history(u), hist, str(u, "status", "operationState", "startedAt"), started, e.deployment().Generation, gen, summary(u))
	}
}

// history is the number of entries of the Application's status.history.
func history(u *unstructured.Unstructured) int {
	h, _, _ := unstructured.NestedSlice(u.Object, "status", "history")
	return len(h)
}

// memoryLimit is the live memory limit of container api.
func memoryLimit(e *env) string {
	for _, c := range e.deployment().Spec.Template.Spec.Containers {
		if c.Name == "api" {
			return c.Resources.Limits.Memory().String()
		}
	}
	return ""
}

func hasPermanent(changes []breakglass.Change, path string) bool {
	for _, c := range changes {
		if strings.HasSuffix(c.Path, path) && c.Class == breakglass.Permanent {
			return true
		}
	}
	return false
}
