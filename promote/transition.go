package promote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// Evidence is what Verify reads: the source environment's evidence
// (until the notifier writes it).
type Evidence struct {
	Environment      string `json:"environment"`
	App              string `json:"app,omitempty"`
	Digest           string `json:"digest"`
	DesiredRevision  string `json:"desiredRevision"`
	ObservedRevision string `json:"observedRevision"`
	RenderedHash     string `json:"renderedHash"`
	RuntimeEvidence  string `json:"runtimeEvidence"`
}

// ReadEvidence reads an evidence file (YAML or JSON) strictly: unknown
// fields are invalid input naming the file.
func ReadEvidence(ctx context.Context, file string) (*Evidence, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, exitcode.InvalidFile(file, err)
	}
	js, err := sigyaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, exitcode.InvalidFile(file, err)
	}
	var ev Evidence
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		return nil, exitcode.InvalidFile(file, fmt.Errorf("decoding evidence: %w", err))
	}
	return &ev, nil
}

// Transition is a record moved and committed.
type Transition struct {
	// Record is the record as committed.
	Record *promotion.Record
	// Branch is where it was committed, Commit the new commit.
	Branch, Commit string
}

// updateRecord moves app/env's record on branch with a compare-and-swap
// commit: on every attempt it reads the record at the branch tip (refusing
// when there is none; missing is added to that refusal), lets advance check
// and transition it (returning the commit message; a refusal is an
// *exitcode.Refusal), validates and writes it.
func updateRecord(ctx context.Context, r *gitops.Repo, branch, app, env, missing string,
	advance func(ctx context.Context, tip string, rec *promotion.Record) (string, error)) (*Transition, error) {
	var rec *promotion.Record
	file := promotion.RecordPath(app, env)
	checkTarget, err := baseRecordTarget(ctx, r)
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
		return map[string][]byte{file: data}, msg, nil
	})
	if err != nil {
		return nil, err
	}
	return &Transition{Record: rec, Branch: branch, Commit: sha}, nil
}

// VerifyRequest asks to record the VERIFIED gate of app's attempt for To.
type VerifyRequest struct {
	App, To string
	// Branch is the attempt branch ("" for the only open one of App/To).
	Branch string
	// Evidence is the source environment's evidence, read from File.
	Evidence *Evidence
	File     string
	Now      time.Time
}

// Verify moves the attempt's record from CANDIDATE to VERIFIED on its
// branch, refusing evidence for another digest, a source record that is not
// ACCEPTED for it, and another desired revision than the one the source
// reconciled.
func Verify(ctx context.Context, r *gitops.Repo, req VerifyRequest) (*Transition, error) {
	b, err := AttemptBranch(ctx, r, req.Branch, req.App, req.To)
	if err != nil {
		return nil, err
	}
	ev := req.Evidence
	return updateRecord(ctx, r, b, req.App, req.To, "", func(ctx context.Context, tip string, rec *promotion.Record) (string, error) {
		if ev.Digest != rec.Artifact.Digest {
			return "", exitcode.Refuse(RulePromotion, "evidence %s is for digest %s, the attempt %s promotes %s", req.File, ev.Digest,
				rec.PromotionID, rec.Artifact.Digest)
		}
		src, err := promotion.ReadRecord(ctx, r, tip, req.App, ev.Environment)
		if err != nil {
			return "", err
		}
		if why := SourceMismatch(src, rec, ev.Environment, ev.DesiredRevision); why != "" {
			return "", exitcode.Refuse(RulePromotion, "%s", why)
		}
		err = rec.Verify(promotion.VerifiedIn{Environment: ev.Environment, DesiredRevision: ev.DesiredRevision,
			ObservedRevision: ev.ObservedRevision, RenderedHash: ev.RenderedHash, RuntimeEvidence: ev.RuntimeEvidence}, req.Now, "throughline promote verify")
		return fmt.Sprintf("promotion %s: VERIFIED in %s at %s\n", rec.PromotionID, ev.Environment,
			ev.ObservedRevision), exitcode.RefuseErr(RuleTransition, err)
	})
}

// SourceMismatch says why the source environment's record src does not
// back rec with the given desired revision ("" when it does).
func SourceMismatch(src, rec *promotion.Record, env, desired string) string {
	file := promotion.RecordPath(rec.App, env)
	switch {
	case src == nil:
		return fmt.Sprintf("no staging evidence for digest %s: %s does not exist", rec.Artifact.Digest, file)
	case src.State != promotion.Accepted:
		return fmt.Sprintf("no staging evidence for digest %s: %s is %s, not ACCEPTED", rec.Artifact.Digest, file, src.State)
	case src.Artifact.Digest != rec.Artifact.Digest:
		return fmt.Sprintf("digest %s is not the one verified in %s (%s accepted %s)", rec.Artifact.Digest, env, file, src.Artifact.Digest)
	case desired != "" && src.Reconciling.DesiredRevision != desired:
		return fmt.Sprintf("%s desired revision mismatch: the evidence names %s, %s reconciled %s", env, desired, file, src.Reconciling.DesiredRevision)
	}
	return ""
}

// ApproveRequest asks to record the APPROVED gate of app's attempt for To.
type ApproveRequest struct {
	App, To string
	// Branch is the attempt branch ("" for the only open one of App/To).
	Branch   string
	Approver string
	Expires  time.Time
	Now      time.Time
	// Renderer is throughline's version: the record's must be the same.
	Renderer string
}

// Approve renders the target at the attempt branch's tip and moves the
// record from VERIFIED to APPROVED, bound to the approval input hash.
func Approve(ctx context.Context, r *gitops.Repo, req ApproveRequest) (*Transition, error) {
	b, err := AttemptBranch(ctx, r, req.Branch, req.App, req.To)
	if err != nil {
		return nil, err
	}
	return updateRecord(ctx, r, b, req.App, req.To, "", func(ctx context.Context, tip string, rec *promotion.Record) (string, error) {
		hash, err := declaredHash(ctx, r, tip, rec, req.Renderer)
		if err != nil {
			return "", err
		}
		in := rec.InputFor(req.Renderer)
		in.RenderedHash = hash
		if rec.Target.Renderer != req.Renderer {
			return "", exitcode.Refuse(RulePromotion, "%s was rendered by throughline %s, this is %s: a new renderer makes a new attempt (propose again)",
				rec.PromotionID, rec.Target.Renderer, req.Renderer)
		}
		err = rec.Approve(req.Approver, in, req.Expires, req.Now)
		return fmt.Sprintf("promotion %s: APPROVED by %s until %s\n", rec.PromotionID, req.Approver, req.Expires.UTC().Format(time.RFC3339)),
			exitcode.RefuseErr(RuleTransition, err)
	})
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
	t, err = updateRecord(ctx, r, records, req.App, req.To, ": merge the promotion PR first", func(_ context.Context, _ string,
		rec *promotion.Record) (string, error) {
		in := rec.InputFor(req.Renderer)
		in.RenderedHash = hash
		if why := rec.ApprovalVoid(in, "", req.Now); why != "" {
			return "", exitcode.Refuse(RuleApproval, "%s at %s: %s", rec.PromotionID, revision, why)
		}
		return fmt.Sprintf("promotion %s: RECONCILING %s\n", rec.PromotionID, revision), exitcode.RefuseErr(RuleTransition,
			rec.Reconcile(revision, req.Now, req.By))
	})
	return t, revision, err
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
