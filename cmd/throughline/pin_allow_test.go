package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
)

// TestPinCheckAgreesWithRender: pin --check and render make the same
// decision on every image: the dev overlay's allow-listed debug-agent
// (environments: [dev]) passes both in dev; the same sidecar patched into
// production is refused by both; pin itself asks no registry for an
// allow-listed image.
func TestPinCheckAgreesWithRender(t *testing.T) {
	repo := copyTree(t, exampleRepo)
	dev := filepath.Join(repo, "apps/checkout/overlays/dev")
	prod := filepath.Join(repo, "apps/checkout/overlays/production")
	writeTree(t, repo, map[string]string{
		"apps/checkout/overlays/production/debug.yaml": readFile(t, filepath.Join(dev, "environment.yaml")),
		"apps/checkout/overlays/production/kustomization.yaml": strings.Replace(readFile(t, filepath.Join(prod, "kustomization.yaml")),
			"  - path: environment.yaml\n", "  - path: environment.yaml\n  - path: debug.yaml\n", 1),
	})
	const agent = "registry.example.test/vendor/debug-agent:3.1"
	for _, tc := range []struct {
		name, dir string
		args      []string
		code      int
	}{
		{"dev", dev, nil, exitcode.OK},
		{"production", prod, nil, exitcode.Refused},
		{"dev overlay rendered as production", dev, []string{"--environment", "production"}, exitcode.Refused},
		// The registry gives the path its environment: claiming dev for
		// production's overlay (to use a dev-only exception) is refused.
		{"production overlay claimed as dev", prod, []string{"--environment", "dev"}, exitcode.Refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, append(append([]string{"render", "--root", repo}, tc.args...), tc.dir)...)
			if r.code != tc.code {
				t.Fatalf("render: exit %d, want %d: %s", r.code, tc.code, r.stderr)
			}
			chk := runCLI(t, append(append([]string{"pin", "--check", "--root", repo}, tc.args...), tc.dir)...)
			if chk.code != r.code {
				t.Fatalf("pin --check: exit %d, render exit %d\n%s\n%s", chk.code, r.code, chk.stdout, chk.stderr)
			}
			switch tc.code {
			case exitcode.OK:
				if !strings.Contains(chk.stdout, "ALLOWED") || !strings.Contains(chk.stdout, agent) || !strings.Contains(chk.stdout, "SEC-1042") {
					t.Errorf("pin --check does not list the exception it used:\n%s", chk.stdout)
				}
				// pin asks no registry for an allow-listed image (registry.example.test does not resolve).
				if p := runCLI(t, append(append([]string{"pin", "--root", repo}, tc.args...), tc.dir)...); p.code != exitcode.OK {
					t.Errorf("pin: exit %d: %s", p.code, p.stderr)
				}
			default:
				if len(tc.args) > 0 {
					for _, out := range []string{r.stderr, chk.stderr} {
						if !strings.Contains(out, "throughline-policy.yaml") || !strings.Contains(out, "not "+tc.args[1]+"'s") {
							t.Errorf("the refusal does not name the registry and the claimed environment:\n%s", out)
						}
					}
					return
				}
				if !strings.Contains(chk.stdout, "UNPINNED") || !strings.Contains(chk.stdout, agent) {
					t.Errorf("pin --check does not list the refused image:\n%s", chk.stdout)
				}
			}
		})
	}
}
