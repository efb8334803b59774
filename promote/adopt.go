package promote

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/overlay"
	"github.com/throughline-dev/throughline/promotion"
)

// AdoptRequest asks to record what app runs in Env when throughline is
// installed, as the environment's baseline.
type AdoptRequest struct {
	App, Env string
	// Path is the environment's overlay, Cluster its cluster ("" for the
	// environment registry's; they must be Env's).
	Path, Cluster string
	// Image is the app's image repository (name[:tag] or name@digest; ""
	// when the overlay pins exactly one repository).
	Image string
	// SourceCommit is the app's source commit of the running image ("":
	// the GitOps commit that pins it, which is all Git knows at adoption).
	SourceCommit string
	// RecordsBranch is where the record is committed ("" for the base).
	RecordsBranch string
	// By is the adopter, recorded as the author and the approver.
	By       string
	Renderer string
	Now      time.Time
}

// Adoption is what Adopt committed.
type Adoption struct {
	Record *promotion.Record `json:"record"`
	// Branch is the records branch, Commit the record's commit; Revision
	// is the desired revision (the base commit whose overlay pins the
	// digest).
	Branch   string `json:"branch"`
	Commit   string `json:"commit"`
	Revision string `json:"revision"`
}

// Adopt records the digest app's overlay in req.Env pins at the tip of the
// base branch as the environment's adopted baseline: attempt 1, VERIFIED
// by adoption (it cites no evidence), APPROVED by the adopter for the
// render as it is, RECONCILING at that commit, on the records branch (a
// compare-and-swap commit that only creates the record). It changes
// nothing live; the notifier's live verification of that desired revision
// is what records it ACCEPTED with runtime evidence, and only then is it a
// rollback target. Refused when the environment already has a record.
func Adopt(ctx context.Context, r *gitops.Repo, req AdoptRequest) (*Adoption, error) {
	if strings.TrimSpace(req.By) == "" {
		return nil, exitcode.Usagef("--by is required: an adoption records who adopted the environment")
	}
	baseRev, err := r.BaseRev(ctx)
	if err != nil {
		return nil, err
	}
	target, err := resolveRequest(ctx, r, baseRev, ProposeRequest{App: req.App, From: req.Env, To: req.Env, Path: req.Path,
		Cluster: req.Cluster, Renderer: req.Renderer})
	if err != nil {
		return nil, err
	}
	rec, err := adoptedRecord(ctx, r, baseRev, target, req)
	if err != nil {
		return nil, err
	}
	records := req.RecordsBranch
	if records == "" {
		records = r.Base
	}
	file := promotion.RecordPath(req.App, req.Env)
	sha, err := r.Swap(ctx, records, func(ctx context.Context, tip string) (map[string][]byte, string, error) {
		cur, err := promotion.ReadRecord(ctx, r, tip, req.App, req.Env)
		if err != nil {
			return nil, "", err
		}
		if cur != nil {
			return nil, "", exitcode.Refuse(RulePromotion, "%s exists on %s (%s, %s): adoption records the baseline of an environment "+
				"that has no record yet", file, records, cur.PromotionID, cur.State)
		}
		data, err := rec.Marshal()
		if err != nil {
			return nil, "", err
		}
		return map[string][]byte{file: data}, fmt.Sprintf("adopt %s %s in %s\n\nPromotion: %s\nAdopted-By: %s\nDesired: %s\n",
			req.App, ledger.ShortDigest(rec.Artifact.Digest), req.Env, rec.PromotionID, req.By, baseRev), nil
	})
	if err != nil {
		return nil, err
	}
	return &Adoption{Record: rec, Branch: records, Commit: sha, Revision: baseRev}, nil
}

// adoptedRecord renders target at baseRev and builds the baseline record
// of the one digest of the app's image it runs, moved to RECONCILING at
// baseRev.
func adoptedRecord(ctx context.Context, r *gitops.Repo, baseRev string, target ProposeRequest, req AdoptRequest) (*promotion.Record, error) {
	tree, err := r.Tree(ctx, baseRev)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tree.Close() }() // a temporary export; the record does not depend on its removal
	d, err := tree.Declare(ctx, target.Path, req.Env, req.Renderer)
	if err != nil {
		return nil, err
	}
	want, _ := overlay.SplitImage(req.Image)
	images := map[string]string{} // repository -> image, of the one digest it runs
	var repos []string
	for _, c := range d.Policy.Containers {
		p := c.Pinned
		if want != "" && p.Repository != want && !strings.HasSuffix(p.Repository, "/"+want) {
			continue
		}
		if prev, ok := images[p.Repository]; ok && !strings.HasSuffix(prev, "@"+p.Digest) {
			return nil, exitcode.Refuse(RulePromotion, "%s runs two digests of %s (%s and %s): adopt an environment that runs one", target.Path,
				p.Repository, prev, c.Image)
		}
		if _, ok := images[p.Repository]; !ok {
			repos = append(repos, p.Repository)
		}
		images[p.Repository] = c.Image
	}
	sort.Strings(repos)
	if len(repos) != 1 {
		return nil, exitcode.Usagef("%s runs %d image repositories matching %q (%s): name the app's with --image", target.Path, len(repos),
			req.Image, strings.Join(repos, ", "))
	}
	image := images[repos[0]]
	_, digest, _ := strings.Cut(image, "@")
	src := req.SourceCommit
	if src == "" {
		src = baseRev
	}
	at := req.Now
	rec, err := promotion.NewCandidate(req.App, 1, promotion.Artifact{Image: image, Digest: digest, SourceCommit: src},
		promotion.Target{Environment: req.Env, Path: target.Path, Cluster: target.Cluster, RenderedHash: d.Hash, BaseRenderedHash: d.Hash,
			Renderer: req.Renderer}, at, req.By)
	if err != nil {
		return nil, err
	}
	for _, step := range []func() error{
		func() error { return rec.VerifyByAdoption(at, req.By) },
		func() error { return rec.Approve(req.By, rec.InputFor(req.Renderer), at.Add(24*time.Hour), at) },
		func() error { return rec.Reconcile(baseRev, at, req.By) },
	} {
		if err := step(); err != nil {
			return nil, exitcode.RefuseErr(RuleTransition, err)
		}
	}
	return rec, nil
}
