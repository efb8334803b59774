//go:build e2e

package argocdcontrol

import (
	"os"
	"path/filepath"
	"strings"
)

// directoryCopy is experiment 3: a pull request copies staging's overlay
// over production's (namespace, replicas, the staging host, the
// environment patch). throughline check, the every-PR gate, refuses it
// naming the boundary it crosses, on the PR's branch, before anything
// reaches main; production's Application, refreshed, stays where it was
// and its live objects are untouched.
func (e *env) directoryCopy() {
	p := e.production()
	before := p.freeze()
	dir := e.clone()
	const branch = "copy-staging-over-production"
	e.in(dir, "checkout", "-q", "-b", branch)
	for _, f := range []string{"kustomization.yaml", "environment.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(stagingPath), f))
		must(e.t, err)
		must(e.t, os.WriteFile(filepath.Join(dir, filepath.FromSlash(prodPath), f), b, 0o644))
	}
	e.in(dir, "commit", "-q", "-am", "production: same as staging")
	e.in(dir, "push", "-q", "origin", branch)

	r := e.cli(nil, "check", "--repo", dir, "--base", "origin/main", "--head", "origin/"+branch)
	e.t.Logf("throughline check of the copy: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	out := r.Stdout + r.Stderr
	for _, want := range []string{
		"REFUSED protected-change: " + prodPath + ": boundary: Deployment.apps " + prodNS + "/checkout metadata.namespace: " + prodNS + " -> " + appNS,
		"boundary: Service " + prodNS + "/checkout metadata.namespace: " + prodNS + " -> " + appNS,
		"routing: Ingress.networking.k8s.io " + prodNS + "/checkout spec.rules[0].host: checkout.example.com -> checkout.staging.example.test",
	} {
		if r.Code != 3 || !strings.Contains(out, want) {
			e.t.Fatalf("arrow PR (staging copied over production) -> PR check refuses naming %q: exit %d\n%s", want, r.Code, out)
		}
	}
	p.unchanged("refused PR -> production Application and live objects unchanged", before)
	e.t.Logf("directory copy refused by the PR check; production still at %.12s, Deployment %s", before.revision, before.image)
}
