package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/promote"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/trust/trusttest"
)

// candidatePolicy makes staging the first environment and production
// promoted from it, each with the trust policy of trustPolicy.
var candidatePolicy = strings.Replace(trustPolicy, "  production:\n", "  production:\n    promotesFrom: [staging]\n", 1)

// candidateRepo is the example repository with candidatePolicy, the CI
// key of w and the example's image in w's registry.
func candidateRepo(t *testing.T, w *trusttest.World) string {
	t.Helper()
	top := t.TempDir()
	root := filepath.Join(top, "gitops")
	if err := os.Rename(copyTree(t, exampleRepo), root); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"staging", "production"} {
		k := "apps/checkout/overlays/" + env + "/kustomization.yaml"
		writeTree(t, root, map[string]string{k: strings.ReplaceAll(readFile(t, filepath.Join(root, k)), "ghcr.io/throughline-dev/checkout", w.Host+"/checkout")})
	}
	for _, f := range []string{"deployment.yaml", "cronjob.yaml"} {
		p := filepath.Join(root, "apps/checkout/base", f)
		writeTree(t, root, map[string]string{"apps/checkout/base/" + f: strings.ReplaceAll(readFile(t, p), "ghcr.io/throughline-dev/checkout", w.Host+"/checkout")})
	}
	writeTree(t, root, map[string]string{"throughline-policy.yaml": candidatePolicy, "keys/ci.pub": string(w.Files["keys/ci.pub"])})
	gittest.Run(t, top, "init", "-q", "-b", "main")
	gittest.Run(t, top, "add", ".")
	gittest.Run(t, top, "commit", "-q", "-m", "the example, its image in the test registry")
	return root
}

// TestPromoteCandidate: CI's image becomes staging's candidate, a pull
// request is opened once; the same command again is the existing attempt
// (no second pull request); JSON output carries the evidence.
func TestPromoteCandidate(t *testing.T) {
	w := trusttest.New(t, true)
	root := candidateRepo(t, w)
	img := w.Image("checkout")
	e := w.CIEvidence(img)
	w.Attach(img, e.All()...)
	image := img.Context().String() + ":1.5.0@" + img.DigestStr()
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var b map[string]any
		_ = json.NewDecoder(r.Body).Decode(&b)
		bodies = append(bodies, b)
		rw.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(rw, `{"number":7,"html_url":"https://github.example/pr/7"}`)
	}))
	defer srv.Close()
	t.Setenv("THROUGHLINE_FORGE_TOKEN", "tok")
	args := []string{"promote", "candidate", "--repo", root, "--app", "checkout", "--to", "staging", "--image", image,
		"--source-commit", trusttest.SourceCommit, "--trust-cache-dir", t.TempDir(), "--forge", "github", "--forge-url", srv.URL, "--forge-repo", "p/g"}
	r := runCLI(t, args...)
	branch := "throughline/promote/checkout/staging/" + trusttest.Hex(img)[:12] + "-1"
	if r.code != exitcode.OK || !strings.Contains(r.stdout, "candidate checkout-staging-") || !strings.Contains(r.stdout, "evidence provenance "+trusttest.DigestOf(e.Prov)) ||
		!strings.Contains(r.stdout, "pull request https://github.example/pr/7") || !strings.Contains(r.stdout, "branch "+branch) {
		t.Fatalf("candidate: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if len(bodies) != 1 || bodies[0]["head"] != branch || !strings.HasPrefix(bodies[0]["title"].(string), "candidate checkout sha256:") {
		t.Fatalf("pull requests %v", bodies)
	}
	r = runCLI(t, append(args, "-o", "json")...)
	var p promote.Proposal
	if r.code != exitcode.OK || json.Unmarshal([]byte(r.stdout), &p) != nil || !p.Existing || len(bodies) != 1 {
		t.Fatalf("the same command again: exit %d, %d pull requests\n%s\n%s", r.code, len(bodies), r.stdout, r.stderr)
	}
	if ev := p.Record.Artifact.Evidence; ev == nil || ev.Candidacy != p.Record.PromotionID || len(ev.Items) != 4 || p.Record.Artifact.SourceCommit != trusttest.SourceCommit {
		t.Fatalf("json record %+v", p.Record)
	}
	// VERIFIED by its candidacy: the line names the recorded evidence, no
	// empty "evidence  at " of a source environment it does not have.
	r = runCLI(t, "promote", "verify", "--repo", root, "--app", "checkout", "--to", "staging", "--trust-cache-dir", t.TempDir())
	if r.code != exitcode.OK || !strings.Contains(r.stdout, "VERIFIED "+p.Record.PromotionID) || !strings.Contains(r.stdout, "its candidacy "+p.Record.PromotionID+" in staging: ") ||
		!strings.Contains(r.stdout, trusttest.DigestOf(e.Prov)) || strings.Contains(r.stdout, "evidence  at") {
		t.Fatalf("verify of the candidacy: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestPromoteVerifySealedCandidacy (issue 33, item 3): a recorded bundle
// of the CANDIDATE record swapped for another valid bundle of the same
// image (a fresher scan) on the attempt branch: promote verify --to
// staging exits 3 with evidence-differs naming that bundle, and records
// nothing.
func TestPromoteVerifySealedCandidacy(t *testing.T) {
	w := trusttest.New(t, true)
	root := candidateRepo(t, w)
	top := filepath.Dir(root)
	img := w.Image("checkout")
	e := w.CIEvidence(img)
	w.Attach(img, e.All()...)
	image := img.Context().String() + ":1.5.0@" + img.DigestStr()
	r := runCLI(t, "promote", "candidate", "--repo", root, "--app", "checkout", "--to", "staging", "--image", image,
		"--source-commit", trusttest.SourceCommit)
	if r.code != exitcode.OK {
		t.Fatalf("candidate: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	fresh := w.SignKey(w.Key, trusttest.Scan(img, w.Now.Add(-time.Minute), nil))
	w.Attach(img, fresh)
	branch := "throughline/promote/checkout/staging/" + trusttest.Hex(img)[:12] + "-1"
	file := promotion.RecordPath("checkout", "staging")
	amendBranch(t, top, branch, func() {
		writeTree(t, root, map[string]string{file: strings.Replace(readFile(t, filepath.Join(root, file)), trusttest.DigestOf(e.Scan),
			trusttest.DigestOf(fresh), 1)})
	})
	tip := gittest.Run(t, top, "rev-parse", branch)
	r = runCLI(t, "promote", "verify", "--repo", root, "--app", "checkout", "--to", "staging")
	if r.code != exitcode.Refused || !strings.Contains(r.stderr, "evidence-differs") || !strings.Contains(r.stderr, "evidence "+trusttest.DigestOf(fresh)) ||
		strings.Contains(r.stderr, trusttest.DigestOf(e.Sig)) {
		t.Fatalf("verify of the swapped scan: exit %d, want %d (evidence-differs naming only the swapped scan)\n%s\n%s", r.code,
			exitcode.Refused, r.stdout, r.stderr)
	}
	if now := gittest.Run(t, top, "rev-parse", branch); now != tip {
		t.Fatalf("a refused verify moved %s: %s -> %s", branch, tip, now)
	}
}

// TestPromoteCandidateRefusals: the exit code and what stderr names.
func TestPromoteCandidateRefusals(t *testing.T) {
	w := trusttest.New(t, true)
	root := candidateRepo(t, w)
	img := w.Image("checkout")
	e := w.CIEvidence(img)
	e.Scan = w.SignKey(w.Key, trusttest.Scan(img, time.Now().Add(-200*time.Hour), nil))
	w.Attach(img, e.All()...)
	base := []string{"promote", "candidate", "--repo", root, "--app", "checkout", "--no-trust-cache", "--source-commit", trusttest.SourceCommit}
	for name, tc := range map[string]struct {
		args []string
		code int
		want []string
	}{
		"scan too old": {[]string{"--to", "staging", "--image", img.String()}, exitcode.Refused,
			[]string{img.DigestStr(), "evidence " + trusttest.DigestOf(e.Scan), "scan-too-old"}},
		"not first": {[]string{"--to", "production", "--image", img.String()}, exitcode.Refused,
			[]string{img.DigestStr(), "candidate-not-first", "environments.production.promotesFrom"}},
		"unknown environment": {[]string{"--to", "qa", "--image", img.String()}, exitcode.Refused, []string{img.DigestStr(), "environment-unknown"}},
		"tag":                 {[]string{"--to", "staging", "--image", img.Context().String() + ":1.5.0"}, exitcode.Invalid, []string{"digest"}},
		"no image":            {[]string{"--to", "staging"}, exitcode.Usage, []string{"--image"}},
	} {
		t.Run(name, func(t *testing.T) {
			r := runCLI(t, append(base, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d: %s", r.code, tc.code, r.stderr)
			}
			for _, s := range tc.want {
				if !strings.Contains(r.stderr, s) {
					t.Fatalf("stderr does not name %q: %s", s, r.stderr)
				}
			}
		})
	}
}
