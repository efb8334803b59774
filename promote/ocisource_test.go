package promote

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/registry"
)

// pushArtifact pushes to ref an artifact as flux push artifact makes one
// (Flux's config and content media types, one layer) with the revision
// annotation rev ("" none) and returns its manifest digest.
func pushArtifact(t *testing.T, ref, rev, content string) string {
	t.Helper()
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, "application/vnd.cncf.flux.config.v1+json")
	img, err := mutate.Append(img, mutate.Addendum{Layer: static.NewLayer([]byte(content), "application/vnd.cncf.flux.content.v1.tar+gzip")})
	must(t, err)
	ann := map[string]string{"org.opencontainers.image.source": "https://git.example/gitops.git"}
	if rev != "" {
		ann[AnnotationRevision] = rev
	}
	img = mutate.Annotations(img, ann).(v1.Image)
	r, err := name.ParseReference(ref, name.Insecure)
	must(t, err)
	must(t, remote.Write(r, img))
	d, err := img.Digest()
	must(t, err)
	return d.String()
}

// TestDesiredArtifact: promote reconcile's desired revision for an OCI
// environment, against a real registry (docker-registry) and real Git:
// the digest staging's tag resolves to, only when the artifact's revision
// annotation names the merged commit.
func TestDesiredArtifact(t *testing.T) {
	t.Parallel()
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	f := newFixture(t)
	repoRef := reg.Host + "/gitops/staging"
	policy := "throughline-policy.yaml"
	f.write(map[string]string{policy: strings.Replace(f.read(policy), "    reconcileDeadline: 15m\n",
		"    reconcileDeadline: 15m\n    source:\n      oci:\n        repository: "+repoRef+"\n        tag: staging\n", 1)})
	merged := f.commit("staging reads an OCI artifact")
	earlier := f.git("rev-list", "--max-parents=0", "HEAD")
	client, err := registry.New(registry.Options{})
	must(t, err)
	ctx := context.Background()
	tests := []struct {
		name string
		rev  string // the annotation; "" none
		env  string
		code int // 0: resolved; the errors' wording is in the golden file
	}{
		{"the merged commit's artifact", "main@sha1:" + merged, "staging", 0},
		{"a bare commit id", merged, "staging", 0},
		{"a git environment", "", "production", 0},
		{"attack: an artifact of an earlier commit (CI has not pushed yet)", "main@sha1:" + earlier, "staging", exitcode.Pending},
		{"attack: an artifact naming another commit", "main@sha1:" + strings.Repeat("9", 40), "staging", exitcode.Refused},
		{"attack: an artifact without revision annotation", "", "staging", exitcode.Refused},
		{"attack: an annotation naming a tag, not a commit", "v1.2.0", "staging", exitcode.Refused},
	}
	record := errorLines(t, "testdata/desired-artifact.golden", 4, reg.Host, "<registry>", merged, "<merged>", earlier, "<earlier>")
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Each artifact differs (its content), so each push moves the tag.
			d := pushArtifact(t, repoRef+":staging", tt.rev, "overlay "+string(rune('a'+i)))
			got, err := DesiredArtifact(ctx, f.repo, client, merged, tt.env, merged)
			switch {
			case tt.code == 0 && err != nil:
				t.Fatal(err)
			case tt.code == 0 && tt.env == "production" && got != "":
				t.Fatalf("a Git environment's desired revision is the commit, got %s", got)
			case tt.code == 0 && tt.env == "staging" && got != d:
				t.Fatalf("desired %s, want the pushed %s", got, d)
			case tt.code != 0 && exitcode.Code(err) != tt.code:
				t.Fatalf("got exit %d %v, want exit %d", exitcode.Code(err), err, tt.code)
			}
			if tt.code == exitcode.Refused {
				if re := refusedBy(t, err, RuleOCIArtifact); re.File != promotion.PolicyFile || re.Field != "environments.staging.source.oci" {
					t.Errorf("%v does not name %s environments.staging.source.oci", err, promotion.PolicyFile)
				}
			}
			if tt.code != 0 {
				record(tt.name, redacted(err, d, "<pushed>"))
			}
		})
	}
}

// TestVerifyOCISource: promote verify on an OCI source environment:
// staging's acceptance rewritten as the OCI artifact ociStaging built from
// the desired commit, with the registry saying staging's source is OCI (or
// not). The desired artifact is verified; another digest, and a revision
// of the other kind than the registry's, are refused.
func TestVerifyOCISource(t *testing.T) {
	t.Parallel()
	ociStaging, other := "sha256:"+strings.Repeat("e1", 32), "sha256:"+strings.Repeat("f2", 32)
	ociPolicy := func(f *fixture) {
		f.write(map[string]string{promotion.PolicyFile: strings.Replace(f.read(promotion.PolicyFile), "    reconcileDeadline: 15m\n",
			"    reconcileDeadline: 15m\n    source:\n      oci:\n        repository: registry.example/gitops/staging\n        tag: staging\n", 1)})
	}
	// asOCI makes staging's acceptance of desired the artifact ociStaging
	// built from desired, observed as observed.
	asOCI := func(f *fixture, observed string) func(m map[string]string) {
		desired := f.git("log", "-1", "--format=%H", "main~2")
		return func(m map[string]string) {
			rec, ev := m["record"], m["evidence"]
			m["record"] = strings.Replace(strings.Replace(rec, "  desiredRevision: "+desired+"\n",
				"  desiredRevision: "+ociStaging+"\n  desiredCommit: "+desired+"\n", 1), "  observedRevision: "+desired+"\n", "  observedRevision: "+observed+"\n", 1)
			m["evidence"] = strings.Replace(strings.Replace(ev, `"desiredRevision": "`+desired+`",`,
				`"desiredRevision": "`+ociStaging+`", "desiredCommit": "`+desired+`",`, 1), `"observedRevision": "`+desired+`"`, `"observedRevision": "`+observed+`"`, 1)
			if m["record"] == rec || m["evidence"] == ev {
				f.t.Fatal("the OCI rewrite did not apply")
			}
		}
	}
	record := errorLines(t, "testdata/verify-oci-source.golden", 3)
	for _, tc := range []struct {
		name   string
		attack func(f *fixture)
		code   int
		want   string // invalid: the record's field; refused: what the golden file says
	}{
		{"the desired artifact of an OCI environment", func(f *fixture) {
			ociPolicy(f)
			f.rewriteAcceptance(asOCI(f, ociStaging))
		}, exitcode.OK, ""},
		{"attack: a digest of another artifact observed", func(f *fixture) {
			ociPolicy(f)
			f.rewriteAcceptance(asOCI(f, other))
		}, exitcode.Invalid, "accepted.observedRevision"},
		{"attack: an OCI revision for a Git environment", func(f *fixture) {
			f.rewriteAcceptance(asOCI(f, ociStaging))
		}, exitcode.Refused, "environment staging's source is Git"},
		{"attack: a Git revision for an OCI environment", func(f *fixture) {
			ociPolicy(f)
			f.commit("staging reads an OCI artifact")
		}, exitcode.Refused, "environment staging's source is an OCI artifact"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.propose()
			tc.attack(f)
			tr, err := Verify(context.Background(), f.repo, VerifyRequest{App: "checkout", To: "production", Now: time.Now()})
			if tc.code == exitcode.OK {
				must(t, err)
				if v := tr.Record.VerifiedIn; v.DesiredRevision != ociStaging || v.ObservedRevision != ociStaging {
					t.Fatalf("verifiedIn %s / %s, want the artifact %s", v.DesiredRevision, v.ObservedRevision, ociStaging)
				}
				return
			}
			staging := promotion.RecordPath("checkout", "staging")
			var rerr *promotion.RecordError
			if tc.code == exitcode.Refused {
				if re := refusedBy(t, err, ledger.RuleSourceEvidence); re.File != staging {
					t.Fatalf("%v, want a refusal of %s", err, staging)
				}
			} else if exitcode.Code(err) != tc.code || !errors.As(err, &rerr) || rerr.File != staging || rerr.Field != tc.want {
				t.Fatalf("got exit %d %v, want exit %d, a record error of %s %s", exitcode.Code(err), err, tc.code, staging, tc.want)
			}
			record(tc.name, err) // tc.want
		})
	}
}
