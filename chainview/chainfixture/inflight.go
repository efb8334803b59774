package chainfixture

import (
	"strings"
	"time"

	"github.com/throughline-dev/throughline/promotion"
)

// API is the app with no record on the base branch whose promotion to
// production waits on its attempt branch (AwaitApprovals).
const API = "api"

// APIDigest is the digest AwaitApprovals proposes.
var APIDigest = "sha256:" + strings.Repeat("9d", 32)

// AwaitApprovals commits, on its attempt branch (returned), what promote
// propose and one promote approve leave there: api's 1.0.0 VERIFIED in
// production, approved by alice, one of the two approvers production
// requires. The base branch does not move.
func (r *Repo) AwaitApprovals() string {
	r.t.Helper()
	rec, err := promotion.NewCandidate(API, 1, promotion.Artifact{Image: "ghcr.io/throughline-dev/api:1.0.0@" + APIDigest, Digest: APIDigest,
		SourceCommit: strings.Repeat("9", 40)},
		promotion.Target{Environment: "production", Path: "apps/api/overlays/production", Cluster: "prod-eu-1",
			RenderedHash: "sha256:" + strings.Repeat("9", 64), BaseRenderedHash: "sha256:" + strings.Repeat("0", 64), Renderer: "v0.1.0"},
		r.next(), "throughline promote propose")
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.fromDev(rec, r.next()); err != nil {
		r.t.Fatal(err)
	}
	if err := rec.AddApproval("alice@example.com", rec.InputFor("v0.1.0"), r.next().Add(48*time.Hour), r.next(), 2); err != nil {
		r.t.Fatal(err)
	}
	data, err := rec.Marshal()
	if err != nil {
		r.t.Fatal(err)
	}
	branch := promotion.AttemptKey{App: API, Digest: APIDigest, Environment: "production", Attempt: 1}.Branch()
	base := strings.TrimSpace(r.git("rev-parse", "--abbrev-ref", "HEAD"))
	r.git("checkout", "-q", "-b", branch)
	r.commit("api VERIFIED in production, approved by alice", map[string][]byte{promotion.RecordPath(API, "production"): data})
	r.git("checkout", "-q", base)
	return branch
}
