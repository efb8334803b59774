package promote

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/trust"
)

// Transition is a record moved and committed.
type Transition struct {
	// Record is the record as committed.
	Record *promotion.Record
	// Branch is where it was committed, Commit the new commit.
	Branch, Commit string
	// Closed are the finished attempt branches the transition deleted
	// (reconcile: the merged attempt's); NotClosed says why others could
	// not be (the record is committed all the same).
	Closed, NotClosed []string
}

// updateRecord moves app/env's record on branch with a compare-and-swap
// commit: on every attempt it reads the record at the branch tip (refusing
// when there is none), lets advance check and transition it (returning the
// commit message; a refusal is an *exitcode.Refusal), validates and writes
// it.
func updateRecord(ctx context.Context, r *gitops.Repo, branch, app, env string,
	advance func(ctx context.Context, tip string, rec *promotion.Record) (string, error)) (*Transition, error) {
	return updateRecordWith(ctx, r, branch, app, env, "", advance, nil)
}

// updateRecordWith is updateRecord that adds missing to the refusal of a
// branch without the record and also writes, in the same commit, the files
// more returns for the tip and the advanced record.
func updateRecordWith(ctx context.Context, r *gitops.Repo, branch, app, env, missing string,
	advance func(ctx context.Context, tip string, rec *promotion.Record) (string, error),
	more func(ctx context.Context, tip string, rec *promotion.Record) (map[string][]byte, error)) (*Transition, error) {
	var rec *promotion.Record
	file := promotion.RecordPath(app, env)
	checkTarget, err := gate.BaseRecordTarget(ctx, r)
	if err != nil {
		return nil, err
	}
	sha, err := r.Swap(ctx, branch, func(ctx context.Context, tip string) (map[string][]byte, string, error) {
		var err error
		rec, err = promotion.ReadRecord(ctx, r, tip, app, env)
		if err != nil {
			return nil, "", err
		}
		if rec == nil {
			return nil, "", exitcode.Refuse(RulePromotion, "branch %s has no record %s%s", branch, file, missing)
		}
		if err := checkTarget(rec, env); err != nil {
			return nil, "", err
		}
		msg, err := advance(ctx, tip, rec)
		if err != nil {
			return nil, "", err
		}
		if err := checkTarget(rec, env); err != nil {
			return nil, "", err
		}
		data, err := rec.Marshal()
		if err != nil {
			return nil, "", err
		}
		files := map[string][]byte{file: data}
		if more != nil {
			extra, err := more(ctx, tip, rec)
			if err != nil {
				return nil, "", err
			}
			for f, d := range extra {
				files[f] = d
			}
		}
		return files, msg, nil
	})
	if err != nil {
		return nil, err
	}
	return &Transition{Record: rec, Branch: branch, Commit: sha}, nil
}

// VerifyRequest asks to record the VERIFIED gate of app's attempt for To.
type VerifyRequest struct {
	App, To string
	// From is the source environment ("" for the only other environment
	// whose record on the base branch is ACCEPTED for the attempt's digest).
	From string
	// Branch is the attempt branch ("" for the only open one of App/To).
	Branch string
	Now    time.Time
	// Trust are the registry options and cache the supply-chain gate
	// re-verifies the recorded evidence with (trust.go).
	Trust trust.Options
}

// Verify moves the attempt's record from CANDIDATE to VERIFIED on its
// branch with the source environment's runtime evidence read from Git
// (ledger.ReadSourceEvidence at the base branch: the source record ACCEPTED for
// the attempt's digest and the notifier's evidence/v1 file at the commit
// where it became ACCEPTED), citing the evidence file and that commit in
// verifiedIn and in the commit message.
func Verify(ctx context.Context, r *gitops.Repo, req VerifyRequest) (*Transition, error) {
	b, err := AttemptBranch(ctx, r, req.Branch, req.App, req.To)
	if err != nil {
		return nil, err
	}
	base, err := r.BaseRev(ctx)
	if err != nil {
		return nil, err
	}
	return updateRecord(ctx, r, b, req.App, req.To, func(ctx context.Context, tip string, rec *promotion.Record) (string, error) {
		if rec.IsCandidacy() && (req.From == "" || req.From == req.To) {
			return verifyCandidacy(ctx, r, base, tip, rec, req)
		}
		from, err := ledger.SourceEnvironment(ctx, r, base, req.From, rec)
		if err != nil {
			return "", err
		}
		src, err := ledger.ReadSourceEvidence(ctx, r, base, req.App, from, rec.Artifact.Digest, req.Now)
		if err != nil {
			return "", err
		}
		if err := verifyTrust(ctx, r, base, rec, src.Record, req.Trust, req.Now); err != nil {
			return "", err
		}
		v := src.VerifiedIn()
		err = rec.Verify(v, req.Now, "throughline promote verify")
		return fmt.Sprintf("promotion %s: VERIFIED in %s at %s\n\nEvidence: %s\nEvidence-Commit: %s\n", rec.PromotionID, from,
			v.ObservedRevision, v.RuntimeEvidence, v.EvidenceCommit), exitcode.RefuseErr(RuleTransition, err)
	})
}

// ApproveRequest asks to record the APPROVED gate of app's attempt for To.
type ApproveRequest struct {
	App, To string
	// Branch is the attempt branch ("" for the only open one of App/To).
	Branch string
	// Approver names who approves. In an environment with approvers the
	// approver is the principal of the user's signing key, and Approver,
	// when set, must be that principal.
	Approver string
	Expires  time.Time
	Now      time.Time
	// Renderer is throughline's version: the record's must be the same.
	Renderer string
}

// Approve renders the target at the attempt branch's tip and moves the
// record from VERIFIED to APPROVED, bound to the approval input hash.
//
// In an environment whose registry entry (at the base branch) lists
// approvers, an approval is a commit signed with the user's own SSH key
// (git's user.signingkey, gpg.format=ssh): the approver is the key's
// principal in the allowed-signers file of the base branch, who must be an
// approver of the environment and must not have proposed the change; the
// record stays VERIFIED until minApprovals distinct approvers signed.
// Elsewhere Approver is recorded as given (unsigned).
//
// When the attempt itself cannot be approved (the branch renders another
// hash than the record proposed, or a policy rule refuses its render), the
// record moves to REJECTED with that reason and the refusal says so.
func Approve(ctx context.Context, r *gitops.Repo, req ApproveRequest) (*Transition, error) {
	b, err := AttemptBranch(ctx, r, req.Branch, req.App, req.To)
	if err != nil {
		return nil, err
	}
	base, err := r.BaseRev(ctx)
	if err != nil {
		return nil, err
	}
	a, err := gate.ReadApprovers(ctx, r, base, req.To)
	if err != nil {
		return nil, err
	}
	approver, writer := req.Approver, r
	if a.Required() > 0 {
		if approver, err = a.ApproverOf(ctx, r, b, req.Approver); err != nil {
			return nil, err
		}
		writer = &gitops.Repo{Repo: r.Signing(), Base: r.Base}
	} else if strings.TrimSpace(approver) == "" {
		return nil, exitcode.Usagef("--approver is required: %s lists no approvers whose signature would name one", req.To)
	}
	var rejected string
	t, err := updateRecord(ctx, writer, b, req.App, req.To, func(ctx context.Context, tip string, rec *promotion.Record) (string, error) {
		rejected = ""
		if a.Required() > 0 {
			how, err := a.ProposedBy(ctx, r, base, tip, req.App, req.To, approver)
			if err != nil {
				return "", err
			}
			if how != "" {
				return "", exitcode.Refuse(gate.RuleFourEyes, "%s proposed %s (%s) and cannot approve it", approver, rec.PromotionID, how)
			}
		}
		if rec.Target.Renderer != req.Renderer {
			return "", exitcode.Refuse(RulePromotion, "%s was rendered by throughline %s, this is %s: a new renderer makes a new attempt (propose again)",
				rec.PromotionID, rec.Target.Renderer, req.Renderer)
		}
		hash, why, err := approvableHash(ctx, r, tip, rec, req.Renderer)
		if err != nil {
			return "", err
		}
		if why != "" && !promotion.Terminal(rec.State) {
			rejected = why
			return fmt.Sprintf("promotion %s: REJECTED: %s\n", rec.PromotionID, why),
				exitcode.RefuseErr(RuleTransition, rec.Stop(promotion.Rejected, "approve refused: "+why, req.Now, approver))
		}
		in := rec.InputFor(req.Renderer)
		in.RenderedHash = hash
		if a.Required() == 0 {
			err = rec.Approve(approver, in, req.Expires, req.Now)
		} else {
			err = rec.AddApproval(approver, in, req.Expires, req.Now, a.Required())
		}
		return approveMessage(rec, approver, req.Expires, a.Required()), exitcode.RefuseErr(RuleTransition, err)
	})
	if err != nil {
		return nil, err
	}
	if rejected != "" {
		return t, exitcode.Refuse(RuleApproval, "%s cannot be approved: %s; the record is now REJECTED on %s at %s",
			t.Record.PromotionID, rejected, t.Branch, t.Commit)
	}
	return t, nil
}

// approvableHash renders rec's target at rev with every policy rule: its
// rendered hash, or why the attempt can never be approved (a policy rule
// refuses the render, or it is not the render the record proposed).
func approvableHash(ctx context.Context, r *gitops.Repo, rev string, rec *promotion.Record, renderer string) (hash, why string, err error) {
	hash, err = declaredHash(ctx, r, rev, rec, renderer)
	var refusal *policy.Refusal
	switch {
	case errors.As(err, &refusal):
		return "", refusal.Error(), nil
	case err != nil:
		return "", "", err
	case rec.State == promotion.Verified && hash != rec.Target.RenderedHash:
		return "", fmt.Sprintf("the attempt branch renders %s, the record proposed %s", hash, rec.Target.RenderedHash), nil
	}
	return hash, "", nil
}

// approveMessage is the commit message of an approval.
func approveMessage(rec *promotion.Record, approver string, expires time.Time, required int) string {
	until := expires.UTC().Format(time.RFC3339)
	if rec.State != promotion.Approved {
		return fmt.Sprintf("promotion %s: approval %d of %d by %s until %s\n", rec.PromotionID, len(rec.Approvals), required, approver, until)
	}
	return fmt.Sprintf("promotion %s: APPROVED by %s until %s\n", rec.PromotionID, approver, until)
}

// declaredHash renders rec's target at rev with every policy rule and
// returns its rendered hash.
func declaredHash(ctx context.Context, r *gitops.Repo, rev string, rec *promotion.Record, renderer string) (string, error) {
	tree, err := r.Tree(ctx, rev)
	if err != nil {
		return "", err
	}
	defer func() { _ = tree.Close() }() // a temporary export; the result does not depend on its removal
	d, err := tree.Declare(ctx, rec.Target.Path, rec.Target.Environment, renderer)
	if err != nil {
		return "", err
	}
	return d.Hash, nil
}

// ReconcileRequest asks to record RECONCILING for app's record in To.
type ReconcileRequest struct {
	App, To string
	// Revision is the merged commit ("" for the tip of the base branch).
	Revision string
	// RecordsBranch is where the record is committed ("" for the base).
	RecordsBranch string
	// By records who made the transition.
	By       string
	Now      time.Time
	Renderer string
	// Artifacts resolves an OCI environment's source (DesiredArtifact).
	Artifacts Artifacts
}

// Reconcile renders the target at the merged revision, checks that the
// record's approval still holds for that render and moves the record to
// RECONCILING with that desired revision, on the records branch. The
// returned transition's Branch is the records branch; revision is the
// resolved desired revision.
func Reconcile(ctx context.Context, r *gitops.Repo, req ReconcileRequest) (t *Transition, revision string, err error) {
	revision = req.Revision
	if revision == "" {
		if revision, err = r.BaseRev(ctx); err != nil {
			return nil, "", err
		}
	} else if revision, err = r.Resolve(ctx, revision); err != nil {
		return nil, "", exitcode.Usagef("--revision: %v", err)
	}
	records := req.RecordsBranch
	if records == "" {
		records = r.Base
	}
	hash, err := renderedHashAt(ctx, r, revision, req.App, req.To, req.Renderer)
	if err != nil {
		return nil, "", err
	}
	base, err := r.BaseRev(ctx)
	if err != nil {
		return nil, "", err
	}
	digest, err := DesiredArtifact(ctx, r, req.Artifacts, base, req.To, revision)
	if err != nil {
		return nil, "", err
	}
	// A pinned environment's Application moves to the desired commit in the
	// commit that records it: the pin is on the base branch, so a pinned
	// environment's records must be there too (a records branch would
	// leave the pin behind, and the promotion could only end HALTED).
	pin := func(ctx context.Context, tip string, rec *promotion.Record) (map[string][]byte, error) {
		if rec.State == promotion.Halted { // merged while closed: a pinned environment stays where it is
			return nil, nil
		}
		reg, err := promotion.ReadRegistry(ctx, r, tip)
		if err != nil {
			return nil, err
		}
		if e, ok := reg.Get(req.To); ok && e.Binding != nil && e.Binding.Pinned && records != r.Base {
			return nil, exitcode.Usagef("environment %s is pinned (binding.pinned): its records are written on %s with its pin, not on --records-branch %s",
				req.To, r.Base, records)
		}
		return pinControllers(ctx, r, reg, tip, req.App, req.To, revision)
	}
	// A merge the target's windows or freezes close (approved inside a
	// window, merged outside it) is recorded HALTED with the reason, then
	// refused: the merged state is not a promotion the policy allows.
	var closed *exitcode.Refusal
	t, err = updateRecordWith(ctx, r, records, req.App, req.To, ": merge the promotion PR first", func(ctx context.Context, _ string,
		rec *promotion.Record) (string, error) {
		closed = nil // the callback runs again when the records branch moved
		in := rec.InputFor(req.Renderer)
		in.RenderedHash = hash
		if why := rec.ApprovalVoid(in, "", req.Now); why != "" {
			return "", exitcode.Refuse(RuleApproval, "%s at %s: %s", rec.PromotionID, revision, why)
		}
		werr := gate.Window(ctx, r, base, req.To, req.Now, rec.VerifiedIn.IsPriorAcceptance())
		if !errors.As(werr, &closed) && werr != nil {
			return "", werr
		}
		overridden := ""
		if closed != nil {
			// Signed freeze overrides lift the closure only while enough of
			// them are valid and unexpired now, at reconcile.
			v, err := gate.ReconcileOverrides(ctx, r, base, rec, in, req.Now)
			if err != nil {
				return "", err
			}
			if v.Covers() {
				overridden = fmt.Sprintf("\n%s is closed (%s): %s\n", req.To, closed.Rule, v.Summary())
				closed = nil
			} else {
				if len(rec.Overrides) > 0 { // the refusal and the record say why the overrides fall short
					closed.Reason += "; " + v.Summary()
					for _, f := range v.Findings {
						closed.Reason += "; " + f.Reason
					}
				}
				reason := fmt.Sprintf("merged at %s while %s is closed (%s): %s", gitrepo.Short(revision), req.To, closed.Rule, closed.Reason)
				return fmt.Sprintf("promotion %s: HALTED: %s\n", rec.PromotionID, reason), exitcode.RefuseErr(RuleTransition,
					rec.Stop(promotion.Halted, reason, req.Now, req.By))
			}
		}
		return fmt.Sprintf("promotion %s: RECONCILING %s\n%s", rec.PromotionID, desiredNote(digest, revision), overridden),
			exitcode.RefuseErr(RuleTransition, reconcileTo(rec, digest, revision, req.Now, req.By))
	}, pin)
	if err != nil {
		return t, revision, err
	}
	if closed != nil {
		return t, revision, closed
	}
	// The merged attempt is finished: its branch is never open again.
	if t.Closed, t.NotClosed, err = closeMerged(ctx, r, t.Commit, t.Record); err != nil {
		t.NotClosed, err = append(t.NotClosed, err.Error()), nil
	}
	return t, revision, nil
}

// renderedHashAt renders the target of app/env's record as it is at rev.
func renderedHashAt(ctx context.Context, r *gitops.Repo, rev, app, env, renderer string) (string, error) {
	rec, err := promotion.ReadRecord(ctx, r, rev, app, env)
	if err != nil {
		return "", err
	}
	if rec == nil {
		return "", exitcode.Refuse(RuleApproval, "%s has no record %s: merge the promotion PR first", rev, promotion.RecordPath(app, env))
	}
	return declaredHash(ctx, r, rev, rec, renderer)
}
