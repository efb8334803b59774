package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/internal/gittest"
)

// checkBranch commits change on a new branch from main of the promotion
// fixture and checks main out again.
func checkBranch(t *testing.T, top, branch string, change func()) {
	t.Helper()
	gittest.Run(t, top, "checkout", "-q", "-b", branch, "main")
	change()
	gittest.Run(t, top, "add", "-A")
	gittest.Run(t, top, "commit", "-q", "--allow-empty", "-m", branch)
	gittest.Run(t, top, "checkout", "-q", "main")
}

// TestCheckCommand: the seed's negative experiment (staging's overlay
// copied over production's, no record) is refused by throughline check and
// by promote check, naming the namespace, host and replica changes; a
// README passes both.
func TestCheckCommand(t *testing.T) {
	top, root := promoteFixture(t)
	checkBranch(t, top, "copied", func() {
		for _, f := range []string{"kustomization.yaml", "environment.yaml"} {
			writeTree(t, root, map[string]string{"apps/checkout/overlays/production/" + f: readFile(t, filepath.Join(root, "apps/checkout/overlays/staging", f))})
		}
	})
	checkBranch(t, top, "readme", func() { writeTree(t, root, map[string]string{"README.md": "hello\n"}) })
	named := []string{"protected-change", "metadata.namespace: checkout-production -> checkout-staging",
		"spec.rules[0].host: checkout.example.com -> checkout.staging.example.test", "spec.replicas: 6 -> 2",
		"environment production (protected, cluster prod-eu-1)"}
	for _, args := range [][]string{{"check"}, {"promote", "check"}} {
		res := runCLI(t, append(args, "--repo", root, "--base", "main", "--head", "copied")...)
		if res.code != 3 {
			t.Fatalf("%v copied: exit %d\n%s\n%s", args, res.code, res.stdout, res.stderr)
		}
		for _, w := range named {
			if !strings.Contains(res.stdout, w) {
				t.Errorf("%v: output does not name %q:\n%s", args, w, res.stdout)
			}
		}
		if strings.Contains(res.stdout, "changes 0") {
			t.Errorf("%v: still the record count:\n%s", args, res.stdout)
		}
		if res := runCLI(t, append(args, "--repo", root, "--base", "main", "--head", "readme")...); res.code != 0 || !strings.Contains(res.stdout, "OK") {
			t.Errorf("%v readme: exit %d\n%s\n%s", args, res.code, res.stdout, res.stderr)
		}
	}
}

// TestCheckJSON: the typed findings of --json; a promotion change carries
// the promotion gate's report beside the repository check's.
func TestCheckJSON(t *testing.T) {
	top, root := promoteFixture(t)
	checkBranch(t, top, "replicas", func() {
		k := "apps/checkout/overlays/production/kustomization.yaml"
		writeTree(t, root, map[string]string{k: strings.Replace(readFile(t, filepath.Join(root, k)), "count: 6", "count: 8", 1)})
	})
	res := runCLI(t, "check", "--repo", root, "--base", "main", "--head", "replicas", "--json")
	var v gate.Verdict
	if err := json.Unmarshal([]byte(res.stdout), &v); err != nil || res.code != 3 {
		t.Fatalf("exit %d, %v\n%s", res.code, err, res.stdout)
	}
	f := v.Repository.Findings
	if v.OK || v.Promotion != nil || len(f) != 1 || f[0].Rule != gate.RuleProtected || f[0].Environment != "production" ||
		f[0].Object != "Deployment.apps checkout-production/checkout" || f[0].Field != "spec.replicas" ||
		f[0].File != "apps/checkout/overlays/production" {
		t.Fatalf("%+v", v)
	}
	branch := proposeBranch(t, root)
	res = runCLI(t, "check", "--repo", root, "--base", "main", "--head", branch, "-o", "json")
	v = gate.Verdict{}
	if err := json.Unmarshal([]byte(res.stdout), &v); err != nil || res.code != 3 {
		t.Fatalf("promotion: exit %d, %v\n%s", res.code, err, res.stdout)
	}
	// A candidate: the promotion gate refuses it (no evidence, no
	// approval); the repository check leaves its target to that gate.
	if v.OK || !v.Repository.OK || v.Repository.Promotion == nil || v.Promotion == nil || v.Promotion.OK ||
		!hasRule(v.Promotion, gate.RuleNotApproved) {
		t.Fatalf("promotion: %+v %+v", v.Repository, v.Promotion)
	}
}

func hasRule(rep *gate.PromotionReport, rule string) bool {
	for _, f := range rep.Findings {
		if f.Rule == rule {
			return true
		}
	}
	return false
}

// TestCheckForgeStatus: --forge sets the verdict as the head's commit
// status.
func TestCheckForgeStatus(t *testing.T) {
	top, root := promoteFixture(t)
	checkBranch(t, top, "readme", func() { writeTree(t, root, map[string]string{"README.md": "hello\n"}) })
	var mu sync.Mutex
	var got []map[string]any
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b map[string]any
		_ = json.NewDecoder(r.Body).Decode(&b)
		mu.Lock()
		got, paths = append(got, b), append(paths, r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	t.Setenv("THROUGHLINE_FORGE_TOKEN", "tok")
	res := runCLI(t, "check", "--repo", root, "--base", "main", "--head", "readme", "--forge", "github", "--forge-url", srv.URL,
		"--forge-repo", "platform/gitops-env")
	head := gittest.Run(t, top, "rev-parse", "readme")
	if res.code != 0 || len(got) != 1 || got[0]["state"] != "success" || got[0]["context"] != "throughline/check" ||
		paths[0] != "/repos/platform/gitops-env/statuses/"+head {
		t.Fatalf("exit %d %v %v\n%s\n%s", res.code, paths, got, res.stdout, res.stderr)
	}
}
