package main

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/golden"
)

// fluxKit is examples/flux: the files that run checkout with Flux instead
// of Argo CD when copied over examples/gitops-env.
var fluxKit = filepath.Join(repoRoot, "examples", "flux")

// rendererLine is the Acceptance's renderer stamp (the binary's version),
// which --check-acceptance ignores and which differs between builds.
var rendererLine = regexp.MustCompile(`(?m)^  renderer: .*$`)

// TestFluxVariant: examples/flux, copied over examples/gitops-env as its
// README says, is a repository where Flux applies checkout's overlays with
// their committed Acceptances: the README's Flux commands pass on it
// (render --check-acceptance exit 0), each Acceptance is exactly what
// render --write-acceptance writes for the example at this commit, its
// kustomization is the example's plus that one resource, the render is
// unchanged, and the every-PR check of the switch refuses nothing but
// production's controller change without its approvers' signatures.
func TestFluxVariant(t *testing.T) {
	envs := []string{"staging", "production"}

	// What render --write-acceptance writes in a copy of the example.
	written := copyTree(t, exampleRepo)
	for _, env := range envs {
		rel := filepath.Join("apps", "checkout", "overlays", env)
		if r := runCLI(t, "render", "--root", written, "--write-acceptance", filepath.Join(written, rel)); r.code != exitcode.OK {
			t.Fatalf("render --write-acceptance %s: exit %d: %s", rel, r.code, r.stderr)
		}
		got, err := os.ReadFile(filepath.Join(written, rel, "throughline-acceptance.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		kit := filepath.Join(fluxKit, rel, "throughline-acceptance.yaml")
		if os.Getenv(golden.UpdateEnv) != "" {
			if err := os.WriteFile(kit, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(kit)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := rendererLine.ReplaceAll(got, nil), rendererLine.ReplaceAll(want, nil); string(g) != string(w) {
			t.Errorf("%s is not what render --write-acceptance writes for the example (%s=1 rewrites it):\n%s", kit, golden.UpdateEnv, got)
		}
		sameYAML(t, filepath.Join(written, rel, "kustomization.yaml"), filepath.Join(fluxKit, rel, "kustomization.yaml"))
	}

	// The example with the kit copied over it, as examples/flux/README.md says.
	repo := copyTree(t, exampleRepo)
	gittest.Init(t, repo)
	gittest.Commit(t, repo, "the example, run by Argo CD", nil)
	hashes := map[string]string{}
	for _, env := range envs {
		hashes[env] = runCLI(t, "render", "--root", repo, "--hash", filepath.Join(repo, "apps", "checkout", "overlays", env)).stdout
	}
	gittest.Run(t, repo, "checkout", "-q", "-b", "flux")
	kit := copyTree(t, fluxKit)
	overwrite(t, kit, repo)
	gittest.Commit(t, repo, "checkout run by Flux (examples/flux)", nil)
	for _, env := range envs {
		app := filepath.Join(repo, "apps", "checkout", "overlays", env)
		if r := runCLI(t, "render", "--root", repo, "--check-acceptance", app); r.code != exitcode.OK {
			t.Errorf("render --check-acceptance %s: exit %d: %s", env, r.code, r.stderr)
		}
		if h := runCLI(t, "render", "--root", repo, "--hash", app).stdout; h != hashes[env] {
			t.Errorf("%s: the committed Acceptance changed the render: %s -> %s", env, hashes[env], h)
		}
	}
	r, err := gitops.OpenLocal(t.Context(), repo)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := gate.CheckRepository(t.Context(), r, gate.Request{Base: "main", Head: "flux"})
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, f := range rep.Findings {
		rules = append(rules, f.Environment+" "+f.Rule)
	}
	slices.Sort(rules)
	rules = slices.Compact(rules)
	if want := []string{"production " + gate.RuleApprovalCount, "production " + gate.RuleJudges}; !reflect.DeepEqual(rules, want) {
		t.Errorf("throughline check of the switch to Flux refuses %v, want only %v:\n%s", rules, want, strings.Join(rep.Refusals, "\n"))
	}
}

// sameYAML fails t unless the YAML files a and b hold the same data
// (comments and layout aside).
func sameYAML(t *testing.T, a, b string) {
	t.Helper()
	var va, vb any
	for _, f := range []struct {
		file string
		v    *any
	}{{a, &va}, {b, &vb}} {
		data, err := os.ReadFile(f.file)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, f.v); err != nil {
			t.Fatalf("%s: %v", f.file, err)
		}
	}
	if !reflect.DeepEqual(va, vb) {
		t.Errorf("%s is not %s (with the Acceptance resource added):\n%v\n%v", b, strings.TrimPrefix(a, os.TempDir()), vb, va)
	}
}

// overwrite copies every regular file under src onto the same path under
// dst, replacing what is there.
func overwrite(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
