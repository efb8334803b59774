package main

import (
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/promotion"
)

// TestAdopt: throughline adopt records the digest production's overlay
// pins as its RECONCILING baseline on main, once: a second adoption, and
// an adoption of an environment with a record, are refused (exit 3).
func TestAdopt(t *testing.T) {
	top, reg, digest := t.TempDir(), "registry.example.test", "sha256:"+strings.Repeat("a", 64)
	writeTree(t, top, map[string]string{
		"apps/web/base/kustomization.yaml": "resources:\n  - deployment.yaml\n",
		"apps/web/base/deployment.yaml":    rbDeployment(reg, ""),
		rbOverlay + "/kustomization.yaml":  rbKustomization(reg, "1.0.0", digest),
	})
	gittest.Run(t, top, "init", "-q", "-b", "main")
	gittest.Run(t, top, "add", ".")
	gittest.Run(t, top, "commit", "-q", "-m", "installed")
	base := gittest.Run(t, top, "rev-parse", "HEAD")
	res := runCLI(t, "adopt", "--repo", top, "--app", "web", "--env", "production", "--by", "alice")
	if res.code != exitcode.OK || !strings.Contains(res.stdout, "adopted web-production-aaaaaaaaaaaa-1") {
		t.Fatalf("adopt: %d %s %s", res.code, res.stdout, res.stderr)
	}
	data := gittest.Run(t, top, "show", "main:"+promotion.RecordPath("web", "production"))
	rec, err := promotion.Parse(promotion.RecordPath("web", "production"), []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != promotion.Reconciling || rec.Reconciling.DesiredRevision != base || !rec.VerifiedIn.IsAdoption() || rec.Artifact.Digest != digest {
		t.Fatalf("adopted record %s %+v %+v", rec.State, rec.Reconciling, rec.VerifiedIn)
	}
	if res := runCLI(t, "adopt", "--repo", top, "--app", "web", "--env", "production", "--by", "alice"); res.code != exitcode.Refused {
		t.Fatalf("adopt again: %d %s %s, want exit 3", res.code, res.stdout, res.stderr)
	}
	if res := runCLI(t, "adopt", "--repo", top, "--app", "web", "--env", "production"); res.code != exitcode.Usage {
		t.Fatalf("adopt without --by: %d, want a usage error", res.code)
	}
}
