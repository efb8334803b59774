package gate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/tracing"
)

// Rules of the PR gate's findings (Finding.Rule).
const (
	// RulePromotionCheck is the rule of the refusal a failed Check makes (exit 3).
	RulePromotionCheck = "promotion-check"
	// RuleRecordCount: a promotion change carries exactly one record.
	RuleRecordCount = "record-count"
	// RuleRecordDeleted: a record is never removed.
	RuleRecordDeleted = "record-deleted"
	// RuleRecordUpdate: the record's change is not a valid update.
	RuleRecordUpdate = "record-update"
	// RuleParameter: a kustomization key other than the digest changed.
	RuleParameter = "parameter"
	// RuleFile: a file other than the record and the kustomization changed.
	RuleFile = "file"
	// RuleBoundary: boundary fields changed.
	RuleBoundary = "boundary"
	// RuleCrossEnvironment: an object names another environment.
	RuleCrossEnvironment = "cross-environment"
	// RulePolicy: a policy rule refused the target's render (the
	// violation's own rule is in Field's place: see Finding).
	RulePolicy = "policy"
	// RuleArtifact: the target renders no container of the artifact.
	RuleArtifact = "artifact"
	// RuleDigest: the target runs another digest of the artifact.
	RuleDigest = "digest"
	// RuleRenderedHash: the render is not the one proposed and approved.
	RuleRenderedHash = "rendered-hash"
	// RuleEvidence: no evidence backs the digest (not VERIFIED, or the
	// source environment's record does not back it).
	RuleEvidence = "evidence"
	// RulePriorAcceptance: a rollback's prior acceptance is not backed.
	RulePriorAcceptance = ledger.RulePriorAcceptance
	// RuleStopped: the record is HALTED or REJECTED.
	RuleStopped = "stopped"
	// RuleNotApproved: the record has no approval.
	RuleNotApproved = "not-approved"
	// RuleApprovalVoid: the approval expired or is bound to other inputs.
	RuleApprovalVoid = "approval-void"
	// RuleMovedTag: the artifact's tag moved, by the drift records.
	RuleMovedTag = "moved-tag"
	// RuleDriftRecord: a drift record cannot be read.
	RuleDriftRecord = "drift-record"
)

// PromotionReport is the PR job's verdict.
type PromotionReport struct {
	Base string `json:"base"`
	// MergeBase is the commit head was cut from (its merge base with
	// base): the change is the difference from it to head (three-dot
	// semantics), so what base gained since is not part of it.
	MergeBase   string             `json:"mergeBase"`
	Head        string             `json:"head"`
	PromotionID string             `json:"promotionId,omitempty"`
	App         string             `json:"app,omitempty"`
	Environment string             `json:"environment,omitempty"`
	Digest      string             `json:"digest,omitempty"`
	State       promotion.State    `json:"state,omitempty"`
	Files       []string           `json:"files"`
	Changes     []promotion.Change `json:"changes"`
	Classes     map[string]int     `json:"classes"`
	Refusals    []string           `json:"refusals"`
	Findings    []Finding          `json:"findings"`
	// Warnings are findings the policy lets pass (movedTags: warn).
	Warnings []Finding `json:"warnings"`
	OK       bool      `json:"ok"`
	// Repository is the repository check's report of a change that carries
	// no promotion record (which it judges instead).
	Repository *RepositoryReport `json:"repository,omitempty"`
	// TraceID is the trace of the gate's span ("" when tracing is off),
	// for the caller's log line.
	TraceID string `json:"-"`
}

// refuse lists a finding: f with its reason formatted.
func (rep *PromotionReport) refuse(f Finding, format string, args ...any) {
	f.Reason = fmt.Sprintf(format, args...)
	if f.Environment == "" {
		f.Environment = rep.Environment
	}
	rep.Refusals = append(rep.Refusals, f.Reason)
	rep.Findings = append(rep.Findings, f)
}

func (rep *PromotionReport) finish() *PromotionReport {
	rep.OK = len(rep.Refusals) == 0
	return rep
}

// promotionCheck is one run of Check: the revisions, the record and both trees.
type promotionCheck struct {
	r        *gitops.Repo
	req      Request
	rep      *PromotionReport
	rec      *promotion.Record
	recFile  string
	pol      *promotion.Policy
	bt, ht   *gitops.Tree
	baseHash string
	declared *acceptance.Declaration
	before   []render.Object
	after    []render.Object
}

// CheckPromotion is the PR gate: the change from base to head may touch only the
// target overlay's image digest and the target's record (plus what the
// policy file allows), and the record must be VERIFIED and APPROVED for
// exactly what head renders. Every reason to refuse is listed in the
// report (OK false); an error is a failure to decide (exit 4 for an invalid
// record, policy or manifest).
func CheckPromotion(ctx context.Context, r *gitops.Repo, req Request) (rep *PromotionReport, err error) {
	ctx, span := tracing.Start(ctx, "gate.promotion", attribute.String("throughline.base", req.Base), attribute.String("throughline.head", req.Head))
	defer func() {
		var found []Finding
		if rep != nil {
			found = rep.Findings
		}
		endCheck(span, rep != nil && rep.OK, found, err)
	}()
	c := &promotionCheck{r: r, req: req}
	stop, err := c.record(ctx)
	if err != nil {
		return nil, err
	}
	c.rep.TraceID = tracing.TraceID(ctx)
	if c.rec != nil {
		span.SetAttributes(tracing.App.String(c.rec.App), tracing.Environment.String(c.rec.Target.Environment),
			tracing.PromotionID.String(c.rec.PromotionID), tracing.Digest.String(c.rec.Artifact.Digest))
	}
	if stop {
		return c.rep, nil
	}
	if c.bt, err = r.Tree(ctx, c.rep.MergeBase); err != nil {
		return nil, err
	}
	defer func() { _ = c.bt.Close() }() // temporary exports; the report does not depend on their removal
	if c.ht, err = r.Tree(ctx, c.rep.Head); err != nil {
		return nil, err
	}
	defer func() { _ = c.ht.Close() }()
	for _, st := range []struct {
		name string
		run  func(context.Context) error
	}{{"registry", c.registry}, {"window", c.window}, {"files", c.files}, {"values-schema", c.valuesSchema}, {"render-diff", c.renderDiff},
		{"policy", c.policy}, {"charts", c.charts}, {"acceptance", c.acceptance}, {"evidence", c.evidence}, {"approval", c.approval},
		{"signed-approvals", c.signedApprovals}, {"drift", c.drift}, {"recorded-tags", c.recordedTags}, {"supply-chain", c.supplyChain}} {
		err := step(ctx, st.name, &c.rep.Findings, st.run)
		if errors.Is(err, errStopCheck) {
			break
		} else if err != nil {
			return nil, err
		}
	}
	return c.rep.finish(), nil
}

// step runs one step of a gate in its span ("gate.step", named by
// throughline.step), which lists the rules of the findings it added to
// *findings.
func step(ctx context.Context, name string, findings *[]Finding, run func(context.Context) error) error {
	ctx, span := tracing.Start(ctx, "gate.step", attribute.String("throughline.step", name))
	before := len(*findings)
	err := run(ctx)
	var rules []string
	for _, f := range (*findings)[before:] {
		rules = append(rules, f.Rule)
	}
	span.SetAttributes(tracing.Rules.StringSlice(rules))
	spanErr := err
	if errors.Is(err, errStopCheck) {
		span.SetAttributes(attribute.Bool("throughline.stopped", true))
		spanErr = nil // a finding stopped the gate: a verdict, not a failure
	}
	tracing.End(span, spanErr)
	return err
}

// record resolves the revisions, lists the changed files and reads the one
// record they change (stop: the report is final without it).
func (c *promotionCheck) record(ctx context.Context) (stop bool, err error) {
	base, err := c.r.Resolve(ctx, c.req.Base)
	if err != nil {
		return true, exitcode.Usagef("--base %s: %v", c.req.Base, err)
	}
	head, err := c.r.Resolve(ctx, c.req.Head)
	if err != nil {
		return true, exitcode.Usagef("--head %s: %v", c.req.Head, err)
	}
	mb, err := c.r.MergeBase(ctx, base, head)
	if err != nil {
		return true, exitcode.Usagef("--base %s and --head %s have no common history: %v", c.req.Base, c.req.Head, err)
	}
	rep := &PromotionReport{Base: base, MergeBase: mb, Head: head, Classes: map[string]int{}, Changes: []promotion.Change{}, Refusals: []string{},
		Findings: []Finding{}, Warnings: []Finding{}}
	if rep.Files, err = c.r.Changed(ctx, mb, head); err != nil {
		return true, err
	}
	var recFiles []string
	for _, f := range rep.Files {
		if rel, ok := c.r.Rel(f); ok && strings.HasPrefix(rel, promotion.Dir+"/") && strings.Count(rel, "/") == 2 && strings.HasSuffix(rel, ".yaml") {
			recFiles = append(recFiles, rel)
		}
	}
	if len(recFiles) == 0 { // no promotion: the repository check of every change judges it (unrecorded.go)
		c.rep, err = c.unrecorded(ctx, rep)
		return true, err
	}
	if len(recFiles) != 1 {
		rep.refuse(Finding{Rule: RuleRecordCount}, "a promotion change carries exactly one promotion record, this one changes %d (%s)",
			len(recFiles), strings.Join(recFiles, ", "))
		c.rep = rep.finish()
		return true, nil
	}
	c.recFile = recFiles[0]
	parts := strings.Split(c.recFile, "/")
	app, env := parts[1], strings.TrimSuffix(parts[2], ".yaml")
	if c.rec, err = promotion.ReadRecord(ctx, c.r, head, app, env); err != nil {
		return true, err
	}
	if c.rec == nil {
		rep.refuse(Finding{Rule: RuleRecordDeleted, File: c.recFile}, "%s is deleted: a record is never removed, a new attempt replaces it", c.recFile)
		c.rep = rep.finish()
		return true, nil
	}
	rep.PromotionID, rep.App, rep.Environment, rep.Digest, rep.State = c.rec.PromotionID, app, env, c.rec.Artifact.Digest, c.rec.State
	prev, err := promotion.ReadRecord(ctx, c.r, base, app, env)
	if err != nil {
		return true, err
	}
	if err := promotion.CheckUpdate(prev, c.rec); err != nil {
		rep.refuse(Finding{Rule: RuleRecordUpdate, File: c.recFile}, "%s: %v", c.recFile, err)
	}
	for _, f := range postMerge(prev, c.rec) {
		rep.refuse(Finding{Rule: RuleRecordUpdate, File: c.recFile, Field: f.field, Old: f.old, New: f.new},
			"%s: %s %s -> %s in a pull request: only %s writes it, after the merge", c.recFile, f.field, f.old, f.new, f.by)
	}
	var re *exitcode.Refusal
	if errors.As(inFlight(prev, c.rec), &re) {
		rep.refuse(Finding{Rule: re.Rule, File: c.recFile, Field: re.Field, Old: prev.PromotionID, New: c.rec.PromotionID}, "%s", re.Reason)
	}
	c.rep = rep
	c.pol, err = promotion.ReadPolicy(ctx, c.r, base) // the rules that judge the change are the base's
	return err != nil, err
}

// files refuses any changed file but the record and the target overlay's
// kustomization, and any kustomization key but the digest the policy does
// not allow.
func (c *promotionCheck) files(ctx context.Context) error {
	kfile, err := TargetFile(ctx, c.ht, c.rec.Target.Path)
	if err != nil {
		return err
	}
	var values []string // a chart app's own value files, as the base lists them
	if ChartListOf(kfile) == DependenciesList {
		if values, err = ChartValueFiles(c.bt, c.rec.Target.Path); err != nil {
			return err
		}
	}
	for _, f := range c.rep.Files {
		rel, inside := c.r.Rel(f)
		switch {
		case inside && rel == c.recFile:
		case inside && c.isCommittedAcceptance(rel):
		case inside && chartLockChanged(rel, kfile): // judged by the charts step (checkcharts.go)
		case inside && rel == kfile && ChartListOf(kfile) == DependenciesList:
			for _, k := range chartFileChanges(ctx, c.bt, c.ht, kfile) {
				c.rep.refuse(Finding{Rule: RuleParameter, File: kfile, Field: k}, "%s: %s changed: a promotion changes only the exact version of "+
					"a remote dependency of a chart app's Chart.yaml", kfile, k)
			}
		case inside && slices.Contains(values, rel):
			if why := c.chartValuesChange(rel); why != "" {
				c.rep.refuse(Finding{Rule: RuleParameter, File: rel}, "%s: %s: a promotion changes only the digest of the artifact %s in a chart "+
					"app's values", rel, why, c.rec.Artifact.Digest)
			}
		case inside && rel == kfile:
			for _, k := range kustomizationChanges(ctx, c.bt, c.ht, kfile) {
				if !c.pol.Allows(k) {
					c.rep.refuse(Finding{Rule: RuleParameter, File: kfile, Field: k},
						"%s: %s changed: a promotion changes only the image digest (allowParameters in %s permits more)", kfile, k, promotion.PolicyFile)
				}
			}
		default:
			c.rep.refuse(Finding{Rule: RuleFile, File: f}, "%s changed: a promotion may change only %s (its images: digest) and %s", f, kfile, c.recFile)
		}
	}
	return nil
}

// chartValuesChange is what else than the artifact's digest changed in a
// chart app's value file rel ("" for nothing).
func (c *promotionCheck) chartValuesChange(rel string) string {
	base, err := c.bt.OptionalFile(rel)
	if err != nil {
		return err.Error()
	}
	head, err := c.ht.OptionalFile(rel)
	if err != nil {
		return err.Error()
	}
	return chartValuesChange(base, head, c.rec.Artifact.Digest)
}

// targetAtBase is the target's rendered hash at the tip of the base
// branch (the merge base's when the base has not moved): a target that
// changed on the base since the branch was cut has moved on.
func (c *promotionCheck) targetAtBase(ctx context.Context) (string, error) {
	if c.rep.MergeBase == c.rep.Base {
		return c.baseHash, nil
	}
	t, err := c.r.Tree(ctx, c.rep.Base)
	if err != nil {
		return "", err
	}
	defer func() { _ = t.Close() }() // a temporary export; the hash does not depend on its removal
	_, hash, err := t.Render(ctx, c.rec.Target.Path)
	if err != nil {
		return "", fmt.Errorf("rendering the target %s at the base %s: %w", c.rec.Target.Path, c.rep.Base, err)
	}
	return hash, nil
}

// renderDiff renders the target before and after, classifies the
// differences and refuses boundary and cross-environment changes the
// policy does not allow.
func (c *promotionCheck) renderDiff(ctx context.Context) error {
	var err error
	if c.before, c.baseHash, err = c.bt.Render(ctx, c.rec.Target.Path); err != nil {
		return err
	}
	if c.baseHash, err = c.targetAtBase(ctx); err != nil {
		return err
	}
	if c.after, _, err = c.ht.Render(ctx, c.rec.Target.Path); err != nil {
		return err
	}
	c.rep.Changes = promotion.Classify(c.before, c.after)
	for cl, n := range promotion.Classes(c.rep.Changes) {
		c.rep.Classes[string(cl)] = n
	}
	var crossed []string
	for _, ch := range c.rep.Changes {
		if ch.Class == promotion.ClassBoundary {
			crossed = append(crossed, ch.String())
		}
	}
	if len(crossed) > 0 && !c.pol.AllowBoundary() {
		c.rep.refuse(Finding{Rule: RuleBoundary, Class: promotion.ClassBoundary, File: promotion.PolicyFile},
			"boundary fields crossed (allowBoundary in %s permits it):\n    %s", promotion.PolicyFile, strings.Join(crossed, "\n    "))
	}
	if !c.pol.AllowCross() {
		for _, x := range crossEnvironment(ctx, c.ht, c.rec.Target.Path, c.rep.Environment, c.before, c.after) {
			c.rep.refuse(Finding{Rule: RuleCrossEnvironment, Object: x.object}, "cross-environment object: %s", x.text)
		}
	}
	return nil
}

// policy renders the target at head with every policy rule and refuses
// its violations, another digest of the artifact and a rendered hash
// other than the approved one.
func (c *promotionCheck) policy(ctx context.Context) error {
	rec := c.rec
	hd, err := c.ht.Declare(ctx, rec.Target.Path, c.rep.Environment, c.req.Renderer)
	var refusal *policy.Refusal
	switch {
	case errors.As(err, &refusal):
		for _, v := range refusal.Violations {
			c.rep.refuse(Finding{Rule: RulePolicy, File: v.File, Object: v.Object, Field: v.Field}, "policy: %s", v.String())
		}
		return nil
	case err != nil:
		return err
	}
	c.declared = hd
	if _, others, n := ArtifactImages(hd, rec.Artifact.Image); n == 0 {
		c.rep.refuse(Finding{Rule: RuleArtifact, File: rec.Target.Path}, "the target renders no container of the artifact %s", rec.Artifact.Image)
	} else if len(others) > 0 {
		c.rep.refuse(Finding{Rule: RuleDigest, Class: promotion.ClassArtifact, File: rec.Target.Path, Object: rec.Artifact.Image,
			Old: rec.Artifact.Digest, New: strings.Join(others, "; ")}, "digest not the verified one %s: %s", rec.Artifact.Digest,
			strings.Join(others, "; "))
	}
	if hd.Hash != rec.Target.RenderedHash {
		c.rep.refuse(Finding{Rule: RuleRenderedHash, File: c.recFile, Field: "target.renderedHash", Old: rec.Target.RenderedHash, New: hd.Hash},
			"rendered hash %s is not the one proposed and approved (%s)", hd.Hash, rec.Target.RenderedHash)
	}
	return nil
}

// evidence refuses a record no evidence backs: not VERIFIED, a source
// record that does not back the digest, or a rollback's prior acceptance
// the base's history does not back.
func (c *promotionCheck) evidence(ctx context.Context) error {
	rec := c.rec
	switch {
	case rec.VerifiedIn == nil:
		c.rep.refuse(Finding{Rule: RuleEvidence, File: c.recFile, Field: "verifiedIn"},
			"no staging evidence for digest %s: %s is %s, not VERIFIED", rec.Artifact.Digest, c.recFile, rec.State)
	case rec.VerifiedIn.IsCandidacy():
		// The first environment: the evidence recorded at candidacy, in a
		// first environment of the base's registry (supplyChain re-verifies
		// the evidence).
		if err := CandidacyClaim(ctx, c.r, c.rep.Base, rec); err != nil {
			return c.trustFinding(err)
		}
		return c.trustFinding(SealedCandidacy(ctx, c.r, c.req.Head, rec, c.req.Trust))
	case rec.VerifiedIn.IsPriorAcceptance():
		// A rollback: the claim must be backed by the base's history.
		var re *exitcode.Refusal
		if err := ledger.CheckPrior(ctx, c.r, c.rep.Base, rec); errors.As(err, &re) {
			c.rep.refuse(Finding{Rule: re.Rule, File: c.recFile, Field: "verifiedIn.priorAcceptance"}, "%s", re.Reason)
		} else if err != nil {
			return err
		}
	default:
		return c.sourceEvidence(ctx)
	}
	return nil
}

// sourceEvidence refuses a VERIFIED claim that the source environment's
// evidence in Git, read at the base as promote verify reads it, does not
// prove, or proves with other revisions, hash or file than the record says.
func (c *promotionCheck) sourceEvidence(ctx context.Context) error {
	v := c.rec.VerifiedIn
	src, err := ledger.ReadSourceEvidence(ctx, c.r, c.rep.Base, c.rec.App, v.Environment, c.rec.Artifact.Digest, c.req.Now)
	var re *exitcode.Refusal
	if errors.As(err, &re) {
		c.rep.refuse(Finding{Rule: RuleEvidence, File: re.File, Field: "verifiedIn"}, "%s", re.Reason)
		return nil
	}
	if err != nil {
		return err
	}
	proven := src.VerifiedIn()
	if v.EvidenceCommit == "" {
		proven.EvidenceCommit = "" // verified before the commit was recorded
	}
	if *v != proven {
		c.rep.refuse(Finding{Rule: RuleEvidence, File: c.recFile, Field: "verifiedIn"},
			"%s: verifiedIn %+v is not what the evidence in Git proves (%s at %s: %+v)", c.recFile, *v, src.Path, gitrepo.Short(src.Commit), proven)
	}
	return nil
}

// approval refuses a stopped record, a missing approval and one that is
// void for what head renders.
func (c *promotionCheck) approval(_ context.Context) error {
	rec := c.rec
	switch {
	case rec.State == promotion.Halted || rec.State == promotion.Rejected:
		c.rep.refuse(Finding{Rule: RuleStopped, File: c.recFile, Field: "state"}, "%s is %s: %s (a fix makes a new candidate)", rec.PromotionID,
			rec.State, rec.Reason)
	case rec.Approval == nil:
		c.rep.refuse(Finding{Rule: RuleNotApproved, File: c.recFile, Field: "approval"},
			"%s is not approved (state %s): run throughline promote approve", rec.PromotionID, rec.State)
	case c.declared != nil:
		in := rec.InputFor(c.req.Renderer)
		in.RenderedHash = c.declared.Hash
		if why := rec.ApprovalVoid(in, c.baseHash, c.req.Now); why != "" {
			c.rep.refuse(Finding{Rule: RuleApprovalVoid, File: c.recFile, Field: "approval"}, "approval void: %s", why)
		}
	}
	return nil
}

// drift refuses a moved tag of the artifact.
func (c *promotionCheck) drift(ctx context.Context) error {
	for _, f := range driftOf(ctx, c.ht, c.req.DriftFiles, c.rec) {
		c.rep.refuse(f, "%s", f.Reason)
	}
	return nil
}

// postMergeField is a field of a record that only a post-merge job writes.
type postMergeField struct{ field, old, new, by string }

// postMerge lists what next, the record a pull request writes over prev
// (the base's), changes of what only the post-merge jobs write: the
// reconciling desired revision (promote reconcile, with the pin of a
// pinned environment) and the accepted observation (the notifier). A pull
// request that wrote them would choose the commit the environment runs.
func postMerge(prev, next *promotion.Record) []postMergeField {
	var was promotion.Record
	if prev != nil && prev.Key() == next.Key() {
		was = *prev
	}
	none := func(s string) string { return cmp.Or(s, "(none)") }
	var out []postMergeField
	var pr, nr promotion.Reconciliation
	if was.Reconciling != nil {
		pr = *was.Reconciling
	}
	if next.Reconciling != nil {
		nr = *next.Reconciling
	}
	if pr.DesiredRevision != nr.DesiredRevision {
		out = append(out, postMergeField{"reconciling.desiredRevision", none(pr.DesiredRevision), none(nr.DesiredRevision), "promote reconcile"})
	}
	if pr.DesiredCommit != nr.DesiredCommit {
		out = append(out, postMergeField{"reconciling.desiredCommit", none(pr.DesiredCommit), none(nr.DesiredCommit), "promote reconcile"})
	}
	var pa, na promotion.Acceptance
	if was.Accepted != nil {
		pa = *was.Accepted
	}
	if next.Accepted != nil {
		na = *next.Accepted
	}
	if pa.ObservedRevision != na.ObservedRevision {
		out = append(out, postMergeField{"accepted.observedRevision", none(pa.ObservedRevision), none(na.ObservedRevision), "the notifier"})
	}
	if pa.RuntimeEvidence != na.RuntimeEvidence {
		out = append(out, postMergeField{"accepted.runtimeEvidence", none(pa.RuntimeEvidence), none(na.RuntimeEvidence), "the notifier"})
	}
	return out
}
