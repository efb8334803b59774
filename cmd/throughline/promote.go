package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/forge"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/overlay"
	"github.com/throughline-dev/throughline/promotion"
)

// pushAttempts bounds the fetch-rebase-retry loop of a contended push.
const pushAttempts = 5

func newPromoteCommand(g *globals, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "promote",
		Short: "Promote a verified artifact digest between environments through promotion records",
		Long: `A promotion moves an artifact identity (an image digest) from one environment
to the next through the promotion/v1 record at promotion/<app>/<env>.yaml:

  CANDIDATE -> VERIFIED -> APPROVED -> RECONCILING -> ACCEPTED
  (any failed gate -> HALTED or REJECTED, with the reason)

  propose   write the source environment's accepted digest into the target
            overlay and a CANDIDATE record, on a branch named from the attempt
            key; push it and open a PR/MR when a forge is configured
  verify    record the VERIFIED gate from the source environment's evidence
  approve   record the APPROVED gate, bound to the approval input hash
  check     the PR job: refuse anything but the verified, approved digest
  reconcile the post-merge job: record RECONCILING with the merged commit
  status    show every record`,
	}
	cmd.AddCommand(
		newPromoteProposeCommand(g, stdout),
		newPromoteVerifyCommand(g, stdout),
		newPromoteApproveCommand(g, stdout),
		newPromoteReconcileCommand(g, stdout),
		newPromoteStatusCommand(stdout),
		newPromoteCheckCommand(g, stdout),
	)
	return cmd
}

// proposal is what propose did.
type proposal struct {
	Record   *promotion.Record  `json:"record"`
	Branch   string             `json:"branch"`
	Commit   string             `json:"commit"`
	Existing bool               `json:"existing"`
	Changes  []promotion.Change `json:"changes"`
	PR       string             `json:"pullRequest,omitempty"`
}

func newPromoteProposeCommand(g *globals, stdout io.Writer) *cobra.Command {
	var (
		repo, app, from, to, targetPath, cluster, output string
		ff                                               forgeFlags
	)
	cmd := &cobra.Command{
		Use:   "propose --repo DIR --app APP --from ENV --to ENV",
		Short: "Propose the digest accepted in one environment for the next, on a branch",
		Long: `Read the digest ACCEPTED in the source environment's record
(promotion/<app>/<from>.yaml on the base branch), write only that digest into
the target overlay's images: entry (replicas, hosts, resources and every other
parameter of the target stay), write the target's CANDIDATE record, and commit
both on the branch throughline/promote/<app>/<to>/<digest12>-<attempt>.

The attempt key is app + digest + target environment + attempt number. The
same request again returns the existing attempt (and opens no second PR); a
changed target (parameters, cluster, renderer version) makes a new attempt.

With a remote, the branch is pushed (never forced: when another proposer
created it first, its attempt is returned). With --forge, a pull/merge request
is opened with the classified diff as its body; otherwise the branch is printed.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if app == "" || from == "" || to == "" {
				return exitcode.Usagef("--app, --from and --to are required")
			}
			if from == to {
				return exitcode.Usagef("--from and --to are both %q", to)
			}
			if output != "text" && output != "json" {
				return exitcode.Usagef("-o %q: want text or json", output)
			}
			fc, err := ff.client()
			if err != nil {
				return err
			}
			if targetPath == "" {
				targetPath = path.Join("apps", app, "overlays", to)
			}
			ctx := cmd.Context()
			r, err := openPromoteRepo(ctx, repo)
			if err != nil {
				return err
			}
			p, err := propose(ctx, r, app, from, to, targetPath, cluster)
			if err != nil {
				return err
			}
			if fc != nil && !p.Existing {
				title := fmt.Sprintf("promote %s %s to %s (%s)", app, promoteShortDigest(p.Record.Artifact.Digest), to, p.Record.PromotionID)
				pr, err := fc.OpenPullRequest(ctx, forge.PullRequest{Title: title, Head: p.Branch, Base: r.base, Body: proposalBody(p)})
				if err != nil {
					return fmt.Errorf("branch %s pushed, but opening the pull request failed: %w", p.Branch, err)
				}
				p.PR = pr.URL
			}
			g.log.Debug().Str("promotion", p.Record.PromotionID).Str("branch", p.Branch).Bool("existing", p.Existing).Msg("proposed")
			if output == "json" {
				return promoteWriteJSON(stdout, p)
			}
			verb := "proposed"
			if p.Existing {
				verb = "existing attempt"
			}
			fmt.Fprintf(stdout, "%s %s: %s %s -> %s, state %s\n", verb, p.Record.PromotionID, app, p.Record.Artifact.Digest, to, p.Record.State)
			fmt.Fprintf(stdout, "branch %s at %s\n", p.Branch, p.Commit)
			if p.PR != "" {
				fmt.Fprintf(stdout, "pull request %s\n", p.PR)
			}
			for _, c := range p.Changes {
				fmt.Fprintln(stdout, "  "+c.String())
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&repo, "repo", "", "the GitOps repository (a Git work tree; the directory is its root)")
	f.StringVar(&app, "app", "", "application name")
	f.StringVar(&from, "from", "", "source environment (its record must be ACCEPTED)")
	f.StringVar(&to, "to", "", "target environment")
	f.StringVar(&targetPath, "path", "", "target overlay, relative to the repository (default apps/APP/overlays/TO)")
	f.StringVar(&cluster, "cluster", "", "target cluster (default: the policy file's, else the environment name)")
	f.StringVarP(&output, "output", "o", "text", "output: text or json")
	ff.add(cmd)
	return cmd
}

func propose(ctx context.Context, r *promoteRepo, app, from, to, targetPath, cluster string) (*proposal, error) {
	baseRev, err := r.baseRev(ctx)
	if err != nil {
		return nil, err
	}
	src, err := r.readRecord(ctx, baseRev, app, from)
	if err != nil {
		return nil, err
	}
	if src == nil {
		return nil, &exitcode.Refusal{Rule: "promotion", Reason: fmt.Sprintf("no promotion record %s on %s: nothing is verified in %s", promotion.RecordPath(app, from), r.base, from)}
	}
	if src.State != promotion.Accepted {
		return nil, &exitcode.Refusal{Rule: "promotion", Reason: fmt.Sprintf("%s is %s, not ACCEPTED: digest %s is not verified in %s", promotion.RecordPath(app, from), src.State, src.Artifact.Digest, from)}
	}
	return proposeArtifact(ctx, r, baseRev, app, src.Artifact, to, targetPath, cluster, proposeOptions{
		By: "throughline promote propose",
		Message: func(rec *promotion.Record) string {
			return fmt.Sprintf("promote %s %s to %s\n\nPromotion: %s\nAttempt-Key: %s %s %s %d\nSource: %s (%s)\n",
				app, promoteShortDigest(rec.Artifact.Digest), to, rec.PromotionID, app, rec.Artifact.Digest, to, rec.Attempt, from, promotion.RecordPath(app, from))
		},
	})
}

// proposeOptions are what differs between the callers of the propose path
// (promote propose, rollback).
type proposeOptions struct {
	// By is recorded as the author of the CANDIDATE transition.
	By string
	// Message is the commit message for the new record.
	Message func(rec *promotion.Record) string
	// MinAttempt: the new attempt number is above it (a rollback to a
	// digest accepted before must not reuse that digest's old attempts).
	MinAttempt int
	// Verify, when set, records the VERIFIED gate on the new CANDIDATE
	// before it is written (a rollback: the environment's own earlier
	// acceptance).
	Verify func(rec *promotion.Record) error
}

// proposeArtifact is the propose path: write art's digest into the target
// overlay at baseRev, check policy, and commit it with a CANDIDATE record on
// the attempt branch (compare-and-swap, never forced).
func proposeArtifact(ctx context.Context, r *promoteRepo, baseRev, app string, art promotion.Artifact, to, targetPath, cluster string, o proposeOptions) (*proposal, error) {
	src := &promotion.Record{Artifact: art}
	pol, err := r.readPolicy(ctx, baseRev)
	if err != nil {
		return nil, err
	}
	if cluster == "" {
		cluster = pol.Cluster(to)
	}
	tree, cleanup, err := r.export(ctx, baseRev)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	before, baseHash, err := promoteRawRender(ctx, tree.root, targetPath)
	if err != nil {
		return nil, err
	}
	kfile, err := kustomizationFile(ctx, tree.root, targetPath)
	if err != nil {
		return nil, err
	}
	kabs := tree.root + "/" + kfile
	data, err := os.ReadFile(kabs)
	if err != nil {
		return nil, err
	}
	name, tag := overlay.SplitImage(src.Artifact.Image)
	edited, changed, err := overlay.SetImageDigest(data, kfile, name, tag, src.Artifact.Digest)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(kabs, edited, 0o644); err != nil {
		return nil, err
	}
	d, err := promoteDeclare(ctx, tree.root, targetPath, to)
	if err != nil {
		return nil, err
	}
	if _, others, n := artifactImages(d, src.Artifact.Image); n == 0 || len(others) > 0 {
		return nil, &exitcode.Refusal{Rule: "promotion", Reason: fmt.Sprintf("after writing %s into %s, the target does not run only that digest of %s: %d container(s), others: %s",
			src.Artifact.Digest, kfile, name, n, strings.Join(others, "; "))}
	}
	after, _, err := promoteRawRender(ctx, tree.root, targetPath)
	if err != nil {
		return nil, err
	}
	target := promotion.Target{Environment: to, Path: targetPath, Cluster: cluster,
		RenderedHash: d.Hash, BaseRenderedHash: baseHash, Renderer: buildVersion()}
	changes := promotion.Classify(before, after)

	// The same request again is the existing attempt.
	cur, err := r.readRecord(ctx, baseRev, app, to)
	if err != nil {
		return nil, err
	}
	maxAttempt := o.MinAttempt
	if cur != nil && cur.Artifact.Digest == src.Artifact.Digest {
		maxAttempt = max(maxAttempt, cur.Attempt)
		if cur.SameAttempt(src.Artifact, target) || (!changed && cur.SameAttempt(src.Artifact, targetWithBase(target, cur.Target.BaseRenderedHash))) {
			return &proposal{Record: cur, Branch: cur.Key().Branch(), Commit: baseRev, Existing: true, Changes: changes}, nil
		}
	}
	if !changed && cur == nil {
		return nil, &exitcode.Refusal{Rule: "promotion", Reason: fmt.Sprintf("%s already runs %s and has no record: nothing to propose", targetPath, src.Artifact.Digest)}
	}
	branches, err := r.Branches(ctx, promotion.BranchGlob(app, to, src.Artifact.Digest))
	if err != nil {
		return nil, err
	}
	for b := range branches {
		rec, err := r.branchRecord(ctx, b, app, to)
		if err != nil {
			return nil, err
		}
		if rec == nil || rec.Artifact.Digest != src.Artifact.Digest {
			continue
		}
		if rec.SameAttempt(src.Artifact, target) {
			return &proposal{Record: rec, Branch: b, Commit: branches[b], Existing: true, Changes: changes}, nil
		}
		maxAttempt = max(maxAttempt, rec.Attempt)
	}
	rec, err := promotion.NewCandidate(app, maxAttempt+1, src.Artifact, target, time.Now(), o.By)
	if err != nil {
		return nil, err
	}
	if o.Verify != nil {
		if err := o.Verify(rec); err != nil {
			return nil, exitcode.RefuseErr("record-transition", err)
		}
	}
	if err := promotion.CheckUpdate(cur, rec); err != nil && cur != nil && cur.Artifact.Digest == rec.Artifact.Digest && cur.Attempt == rec.Attempt {
		return nil, &exitcode.Refusal{Rule: "promotion", Reason: err.Error()}
	}
	recData, err := rec.Marshal()
	if err != nil {
		return nil, err
	}
	msg := o.Message(rec)
	files := map[string][]byte{promotion.RecordPath(app, to): recData}
	if changed {
		files[kfile] = edited
	}
	sha, err := r.Commit(ctx, baseRev, files, msg)
	if err != nil {
		return nil, err
	}
	branch := rec.Key().Branch()
	if err := r.SetBranch(ctx, branch, "", sha); err != nil {
		if !errors.Is(err, gitrepo.ErrRejected) && !errors.Is(err, gitrepo.ErrUnchanged) {
			return nil, err
		}
		// Another proposer created the branch first (perhaps with the very
		// same commit): its attempt wins.
		if ferr := r.Fetch(ctx); ferr != nil {
			return nil, exitcode.NotDecided(ferr)
		}
		won, rerr := r.branchRecord(ctx, branch, app, to)
		if rerr != nil {
			return nil, rerr
		}
		if won == nil || !won.SameAttempt(src.Artifact, target) {
			return nil, fmt.Errorf("branch %s exists and does not hold this attempt: %w", branch, err)
		}
		tip, _ := r.BranchTip(ctx, branch)
		return &proposal{Record: won, Branch: branch, Commit: tip, Existing: true, Changes: changes}, nil
	}
	return &proposal{Record: rec, Branch: branch, Commit: sha, Changes: changes}, nil
}

func targetWithBase(t promotion.Target, base string) promotion.Target {
	t.BaseRenderedHash = base
	return t
}

// branchRecord reads the record of app/env at the tip of branch.
func (r *promoteRepo) branchRecord(ctx context.Context, branch, app, env string) (*promotion.Record, error) {
	tip, err := r.BranchTip(ctx, branch)
	if err != nil {
		return nil, err
	}
	return r.readRecord(ctx, tip, app, env)
}

// attemptBranch finds the branch to update: the given one, else the only
// open attempt branch of app/env.
func (r *promoteRepo) attemptBranch(ctx context.Context, branch, app, env string) (string, error) {
	if branch != "" {
		return branch, nil
	}
	bs, err := r.Branches(ctx, promotion.BranchPrefix+app+"/"+env+"/*")
	if err != nil {
		return "", err
	}
	var names []string
	for b := range bs {
		names = append(names, b)
	}
	sort.Strings(names)
	switch len(names) {
	case 0:
		return "", exitcode.Usagef("no attempt branch %s%s/%s/*: run promote propose, or name one with --branch", promotion.BranchPrefix, app, env)
	case 1:
		return names[0], nil
	}
	return "", exitcode.Usagef("several attempt branches for %s/%s (%s): name one with --branch", app, env, strings.Join(names, ", "))
}

// evidenceFile is what promote verify reads (until the notifier writes it).
type promoteEvidence struct {
	Environment      string `json:"environment"`
	App              string `json:"app,omitempty"`
	Digest           string `json:"digest"`
	DesiredRevision  string `json:"desiredRevision"`
	ObservedRevision string `json:"observedRevision"`
	RenderedHash     string `json:"renderedHash"`
	RuntimeEvidence  string `json:"runtimeEvidence"`
}

func readPromoteEvidence(ctx context.Context, file string) (*promoteEvidence, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, &exitcode.InvalidInput{File: file, Err: err}
	}
	js, err := sigyaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, &exitcode.InvalidInput{File: file, Err: err}
	}
	var ev promoteEvidence
	dec := json.NewDecoder(strings.NewReader(string(js)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		return nil, &exitcode.InvalidInput{File: file, Err: fmt.Errorf("decoding evidence: %w", err)}
	}
	return &ev, nil
}

func newPromoteVerifyCommand(g *globals, stdout io.Writer) *cobra.Command {
	var repo, app, to, branch, evidence string
	cmd := &cobra.Command{
		Use:   "verify --repo DIR --app APP --to ENV --evidence FILE",
		Short: "Record the VERIFIED gate from the source environment's evidence",
		Long: `Read the evidence FILE (YAML or JSON: environment, digest, desiredRevision,
observedRevision, renderedHash, runtimeEvidence) of the source environment and
move the attempt's record from CANDIDATE to VERIFIED on its branch.

Refused (exit 3) when the evidence is for another digest, when the source
environment's record is not ACCEPTED for that digest, when the evidence's
desired revision is not the one the source record reconciled, or when the
controller observed another revision. The push is a compare-and-swap: on a
non-fast-forward it fetches, re-applies and retries; it never forces.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if app == "" || to == "" || evidence == "" {
				return exitcode.Usagef("--app, --to and --evidence are required")
			}
			ctx := cmd.Context()
			ev, err := readPromoteEvidence(ctx, evidence)
			if err != nil {
				return err
			}
			r, err := openPromoteRepo(ctx, repo)
			if err != nil {
				return err
			}
			b, err := r.attemptBranch(ctx, branch, app, to)
			if err != nil {
				return err
			}
			rec, sha, err := r.updateRecord(ctx, b, app, to, "", func(ctx context.Context, tip string, rec *promotion.Record) (string, error) {
				if ev.Digest != rec.Artifact.Digest {
					return "", &exitcode.Refusal{Rule: "promotion", Reason: fmt.Sprintf("evidence %s is for digest %s, the attempt %s promotes %s", evidence, ev.Digest, rec.PromotionID, rec.Artifact.Digest)}
				}
				src, err := r.readRecord(ctx, tip, app, ev.Environment)
				if err != nil {
					return "", err
				}
				if why := sourceMismatch(src, rec, ev.Environment, ev.DesiredRevision); why != "" {
					return "", &exitcode.Refusal{Rule: "promotion", Reason: why}
				}
				err = rec.Verify(promotion.VerifiedIn{Environment: ev.Environment, DesiredRevision: ev.DesiredRevision,
					ObservedRevision: ev.ObservedRevision, RenderedHash: ev.RenderedHash, RuntimeEvidence: ev.RuntimeEvidence}, time.Now(), "throughline promote verify")
				return fmt.Sprintf("promotion %s: VERIFIED in %s at %s\n", rec.PromotionID, ev.Environment, ev.ObservedRevision), exitcode.RefuseErr("record-transition", err)
			})
			if err != nil {
				return err
			}
			g.log.Debug().Str("promotion", rec.PromotionID).Str("commit", sha).Msg("verified")
			_, err = fmt.Fprintf(stdout, "VERIFIED %s on %s at %s\n", rec.PromotionID, b, sha)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&repo, "repo", "", "the GitOps repository")
	f.StringVar(&app, "app", "", "application name")
	f.StringVar(&to, "to", "", "target environment of the attempt")
	f.StringVar(&branch, "branch", "", "attempt branch (default: the only open one of APP/TO)")
	f.StringVar(&evidence, "evidence", "", "evidence file of the source environment")
	return cmd
}

// sourceMismatch says why the source environment's record does not back
// rec with the given desired revision ("" when it does).
func sourceMismatch(src, rec *promotion.Record, env, desired string) string {
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

func newPromoteApproveCommand(g *globals, stdout io.Writer) *cobra.Command {
	var (
		repo, app, to, branch, approver, expires string
	)
	cmd := &cobra.Command{
		Use:   "approve --repo DIR --app APP --to ENV --approver NAME --expires 24h",
		Short: "Record the APPROVED gate, bound to the exact inputs, until an expiry",
		Long: `Render the target at the attempt branch's tip and move the record from VERIFIED
to APPROVED with the approver, the expiry and the approval input hash: sha256
over the artifact digest, the target rendered hash, the target path, the target
cluster, throughline's version and expiresAt. The approval is void when it
expires, when any input changes, or when the target moves on.

--expires takes a duration from now (24h) or an RFC 3339 time.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if app == "" || to == "" || approver == "" || expires == "" {
				return exitcode.Usagef("--app, --to, --approver and --expires are required")
			}
			now := time.Now()
			exp, err := parseExpiry(expires, now)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			r, err := openPromoteRepo(ctx, repo)
			if err != nil {
				return err
			}
			b, err := r.attemptBranch(ctx, branch, app, to)
			if err != nil {
				return err
			}
			rec, sha, err := r.updateRecord(ctx, b, app, to, "", func(ctx context.Context, tip string, rec *promotion.Record) (string, error) {
				tree, cleanup, err := r.export(ctx, tip)
				if err != nil {
					return "", err
				}
				defer cleanup()
				d, err := promoteDeclare(ctx, tree.root, rec.Target.Path, to)
				if err != nil {
					return "", err
				}
				in := rec.InputFor(buildVersion())
				in.RenderedHash = d.Hash
				if rec.Target.Renderer != buildVersion() {
					return "", &exitcode.Refusal{Rule: "promotion", Reason: fmt.Sprintf("%s was rendered by throughline %s, this is %s: a new renderer makes a new attempt (propose again)", rec.PromotionID, rec.Target.Renderer, buildVersion())}
				}
				err = rec.Approve(approver, in, exp, now)
				return fmt.Sprintf("promotion %s: APPROVED by %s until %s\n", rec.PromotionID, approver, exp.UTC().Format(time.RFC3339)), exitcode.RefuseErr("record-transition", err)
			})
			if err != nil {
				return err
			}
			g.log.Debug().Str("promotion", rec.PromotionID).Str("commit", sha).Msg("approved")
			_, err = fmt.Fprintf(stdout, "APPROVED %s by %s until %s (input hash %s) on %s at %s\n",
				rec.PromotionID, approver, rec.Approval.ExpiresAt.Format(time.RFC3339), rec.Approval.InputHash, b, sha)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&repo, "repo", "", "the GitOps repository")
	f.StringVar(&app, "app", "", "application name")
	f.StringVar(&to, "to", "", "target environment of the attempt")
	f.StringVar(&branch, "branch", "", "attempt branch (default: the only open one of APP/TO)")
	f.StringVar(&approver, "approver", "", "who approves (recorded)")
	f.StringVar(&expires, "expires", "", "expiry: a duration from now (24h) or an RFC 3339 time")
	return cmd
}

func parseExpiry(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, exitcode.Usagef("--expires %s: must be in the future", s)
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, exitcode.Usagef("--expires %q: want a duration (24h) or an RFC 3339 time", s)
	}
	if !t.After(now) {
		return time.Time{}, exitcode.Usagef("--expires %s is in the past", s)
	}
	return t, nil
}

// statusRow is one record in promote status.
type statusRow struct {
	App         string          `json:"app"`
	Environment string          `json:"environment"`
	Attempt     int             `json:"attempt"`
	State       promotion.State `json:"state"`
	Digest      string          `json:"digest"`
	PromotionID string          `json:"promotionId"`
	Ref         string          `json:"ref"`
	Reason      string          `json:"reason,omitempty"`
	ExpiresAt   *time.Time      `json:"approvalExpiresAt,omitempty"`
}

func newPromoteStatusCommand(stdout io.Writer) *cobra.Command {
	var repo, app, output string
	cmd := &cobra.Command{
		Use:   "status --repo DIR [--app APP]",
		Short: "Show every promotion record, on the base branch and on open attempt branches",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return exitcode.Usagef("-o %q: want text or json", output)
			}
			ctx := cmd.Context()
			r, err := openPromoteRepo(ctx, repo)
			if err != nil {
				return err
			}
			rows, err := statusRows(ctx, r, app)
			if err != nil {
				return err
			}
			if output == "json" {
				return promoteWriteJSON(stdout, rows)
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "APP\tENV\tATTEMPT\tSTATE\tDIGEST\tPROMOTION\tREF\tNOTE")
			for _, row := range rows {
				note := row.Reason
				if row.ExpiresAt != nil && note == "" {
					note = "approval expires " + row.ExpiresAt.Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", row.App, row.Environment, row.Attempt, row.State, promoteShortDigest(row.Digest), row.PromotionID, row.Ref, note)
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&repo, "repo", "", "the GitOps repository")
	f.StringVar(&app, "app", "", "only this application")
	f.StringVarP(&output, "output", "o", "text", "output: text or json")
	return cmd
}

func statusRows(ctx context.Context, r *promoteRepo, onlyApp string) ([]statusRow, error) {
	refs := map[string]string{}
	base, err := r.baseRev(ctx)
	if err != nil {
		return nil, err
	}
	refs[r.base] = base
	bs, err := r.Branches(ctx, promotion.BranchPrefix+"*")
	if err != nil {
		return nil, err
	}
	for b := range bs {
		if tip, err := r.BranchTip(ctx, b); err == nil {
			refs[b] = tip
		}
	}
	var names []string
	for n := range refs {
		names = append(names, n)
	}
	sort.Strings(names)
	var rows []statusRow
	seen := map[string]bool{}
	for _, ref := range names {
		out, err := r.Git(ctx, "ls-tree", "-r", "--name-only", refs[ref], "--", r.Prefix+promotion.Dir+"/")
		if err != nil {
			return nil, err
		}
		for _, f := range strings.Fields(out) {
			rel, _ := r.Rel(f)
			parts := strings.Split(rel, "/")
			if len(parts) != 3 || !strings.HasSuffix(parts[2], ".yaml") {
				continue
			}
			a, env := parts[1], strings.TrimSuffix(parts[2], ".yaml")
			if onlyApp != "" && a != onlyApp {
				continue
			}
			rec, err := r.readRecord(ctx, refs[ref], a, env)
			if err != nil {
				return nil, err
			}
			if rec == nil || seen[rec.PromotionID+"@"+string(rec.State)] {
				continue
			}
			key := rec.PromotionID + "@" + string(rec.State)
			seen[key] = true
			row := statusRow{App: rec.App, Environment: env, Attempt: rec.Attempt, State: rec.State, Digest: rec.Artifact.Digest, PromotionID: rec.PromotionID, Ref: ref, Reason: rec.Reason}
			if rec.Approval != nil {
				e := rec.Approval.ExpiresAt
				row.ExpiresAt = &e
			}
			rows = append(rows, row)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].App != rows[j].App {
			return rows[i].App < rows[j].App
		}
		return rows[i].Environment < rows[j].Environment
	})
	return rows, nil
}

func promoteShortDigest(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}

func promoteWriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// proposalBody is the PR/MR description: the classified diff.
func proposalBody(p *proposal) string {
	var b strings.Builder
	rec := p.Record
	fmt.Fprintf(&b, "Promotion `%s` (attempt %d): `%s` into **%s** (`%s`, cluster `%s`).\n\n", rec.PromotionID, rec.Attempt, rec.Artifact.Image, rec.Target.Environment, rec.Target.Path, rec.Target.Cluster)
	fmt.Fprintf(&b, "Target rendered hash: `%s` (was `%s`), throughline %s.\n\n", rec.Target.RenderedHash, rec.Target.BaseRenderedHash, rec.Target.Renderer)
	b.WriteString("| class | object | field | before | after |\n|---|---|---|---|---|\n")
	for _, c := range p.Changes {
		fmt.Fprintf(&b, "| %s | %s | %s | `%s` | `%s` |\n", c.Class, c.Object, c.Field, c.Before, c.After)
	}
	b.WriteString("\nThe PR job (`throughline promote check`) passes once the record is VERIFIED and APPROVED.\n")
	return b.String()
}
