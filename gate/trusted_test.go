package gate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/trust"
	"github.com/throughline-dev/throughline/trust/trusttest"
)

// TestCheckVerifiesImagesOfTrustedEnvironments (issue 32, item 4): staging
// requires supply-chain evidence (the example's trust policy, with the
// test CI's key). A pull request with no record that points staging at an
// image without evidence, or at a tag, is refused by the every-PR check as
// the same change with a candidate record is by the promotion gate; the
// CI's image with its evidence passes; and a PR that edits the trust
// policy away in the same change is judged by the base's.
func TestCheckVerifiesImagesOfTrustedEnvironments(t *testing.T) {
	t.Parallel()
	w := trusttest.New(t, false)
	good := w.Image("throughline-dev/checkout")
	w.AttachTag(good, ".att", w.CIEvidence(good).All()...)
	bad := w.Image("throughline-dev/checkout")
	f := newFixtureWith(t, func(root string) {
		for p, data := range w.Files {
			if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, p), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
	opts := trust.Options{Transport: w.As(), CacheDir: t.TempDir(), Now: time.Now()}
	k := staging + "/kustomization.yaml"
	pointAt := func(branch, tag string, more func()) {
		f.branch(branch, func() {
			f.replace(k, `newTag: "1.4.2@sha256:9c2f1e0d7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa98765432"`, `newTag: "`+tag+`"`)
			if more != nil {
				more()
			}
		})
	}
	pointAt("unsigned", "1.5.0@"+bad.DigestStr(), nil)
	pointAt("signed", "1.5.0@"+good.DigestStr(), nil)
	pointAt("tag", "1.5.0", nil)
	pointAt("unsigned-policy-removed", "1.5.0@"+bad.DigestStr(), func() {
		testenv.RemoveTrust(t, f.root)
	})
	image := "ghcr.io/throughline-dev/checkout:1.5.0@"
	for _, tc := range []struct {
		branch, rule, object string
	}{
		{"unsigned", trust.RuleSignatureMissing, image + bad.DigestStr()},
		{"unsigned-policy-removed", trust.RuleSignatureMissing, image + bad.DigestStr()},
		{"tag", RuleTrustUnpinned, "ghcr.io/throughline-dev/checkout:1.5.0"},
		{"signed", "", ""},
	} {
		t.Run(tc.branch, func(t *testing.T) {
			rep := f.checkWith(Request{Base: "main", Head: tc.branch, Trust: opts})
			if tc.rule == "" {
				if !rep.OK {
					t.Fatalf("the CI's image with its evidence is refused: %q", rep.Refusals)
				}
				return
			}
			i := slices.IndexFunc(rep.Findings, func(fd Finding) bool { return fd.Rule == tc.rule })
			if i < 0 {
				t.Fatalf("rules %v, want %s: %q", rules(rep), tc.rule, rep.Refusals)
			}
			if fd := rep.Findings[i]; fd.Environment != "staging" || fd.File != staging || fd.Object != tc.object || fd.New != tc.object {
				t.Errorf("finding %+v", fd)
			}
			if !strings.Contains(rep.Findings[i].Reason, "staging's trust policy") && tc.rule != RuleTrustUnpinned {
				t.Errorf("reason %q", rep.Findings[i].Reason)
			}
		})
	}
}
