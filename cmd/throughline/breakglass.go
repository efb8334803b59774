package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/throughline-dev/throughline/breakglass"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/forge"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/render"
)

func newBreakglassCommand(g *globals, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "breakglass",
		Short: "Pause reconciliation of one application for an incident, write the live changes back, resume",
		Long: `Break-glass suspends the reconciliation of exactly one application so that an
operator can patch it live during an incident, and records it in Git:

  pause      Argo CD: remove spec.syncPolicy.automated of the Application
             (refused when an ApplicationSet or a parent app would restore it);
             Flux: spec.suspend: true on the Kustomization. Records
             breakglass/<env>/<app>.yaml: source revision, the live objects'
             resourceVersion and managedFields, operator, ticket, expiry.
  writeback  three-way comparison (desired before the pause, live now,
             desired now); the permanent live changes become a patch in the
             overlay on a branch (a PR with --forge), the rest are listed.
  resume     re-enable reconciliation once the write-back is merged into the
             base branch (or --force with --reason); records how it ended.

See docs/breakglass.md.`,
	}
	cmd.AddCommand(newBreakglassPauseCommand(g, stdout), newBreakglassWritebackCommand(g, stdout), newBreakglassResumeCommand(g, stdout))
	return cmd
}

// breakglassFlags are shared by the breakglass commands.
type breakglassFlags struct {
	repo, app, env, controller, namespace, name, operator string
	kf                                                    kubeFlags
}

func (b *breakglassFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&b.repo, "repo", "", "the GitOps repository (a Git work tree; the directory is its root)")
	f.StringVar(&b.app, "app", "", "application name")
	f.StringVar(&b.env, "env", "", "environment")
	f.StringVar(&b.controller, "controller", "argocd", "the GitOps controller: argocd (Application) or flux (Kustomization)")
	f.StringVar(&b.namespace, "namespace", "", "namespace of the Application / Kustomization (default argocd / flux-system)")
	f.StringVar(&b.name, "name", "", "name of the Application / Kustomization (default APP-ENV)")
	f.StringVar(&b.operator, "operator", os.Getenv("USER"), "who does it (recorded)")
	b.kf.add(cmd)
}

func (b *breakglassFlags) check() error {
	if b.repo == "" || b.app == "" || b.env == "" {
		return exitcode.Usagef("--repo, --app and --env are required")
	}
	if b.controller != string(breakglass.ArgoCD) && b.controller != string(breakglass.Flux) {
		return exitcode.Usagef("--controller %q: want argocd or flux", b.controller)
	}
	if b.operator == "" {
		return exitcode.Usagef("--operator is required (no $USER)")
	}
	return nil
}

func (b *breakglassFlags) target() breakglass.Target {
	name := b.name
	if name == "" {
		name = b.app + "-" + b.env
	}
	return breakglass.Target{Controller: breakglass.Controller(b.controller), Namespace: b.namespace, Name: name}
}

func (b *breakglassFlags) client() (client.Client, error) {
	cfg, err := b.kf.config()
	if err != nil {
		return nil, err
	}
	scheme, err := kubeScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return c, nil
}

// readBreakglass reads the pause record of app/env at rev (nil when none).
func readBreakglass(ctx context.Context, r *promoteRepo, rev, app, env string) (*breakglass.Record, error) {
	file := breakglass.Path(env, app)
	data, err := r.ReadFile(ctx, rev, file)
	if errors.Is(err, gitrepo.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec, err := breakglass.Parse(file, data)
	if err != nil {
		return nil, &exitcode.InvalidInput{File: file, Err: err}
	}
	return rec, nil
}

// pauseState is the GitOps repository, the commit of its base branch and
// the pause record of one app/env on it (nil when there is none).
type pauseState struct {
	repo *promoteRepo
	base string
	rec  *breakglass.Record
}

// openPause opens the repository of bf (fetching it), resolves the base
// branch and reads the pause record there.
func openPause(ctx context.Context, bf *breakglassFlags) (*pauseState, error) {
	r, err := openPromoteRepo(ctx, bf.repo)
	if err != nil {
		return nil, err
	}
	base, err := r.baseRev(ctx)
	if err != nil {
		return nil, err
	}
	rec, err := readBreakglass(ctx, r, base, bf.app, bf.env)
	if err != nil {
		return nil, err
	}
	return &pauseState{repo: r, base: base, rec: rec}, nil
}

// openActivePause is openPause that refuses (exit 3) when no pause is
// active; why says what cannot be done then.
func openActivePause(ctx context.Context, bf *breakglassFlags, why string) (*pauseState, error) {
	ps, err := openPause(ctx, bf)
	if err != nil {
		return nil, err
	}
	if !ps.rec.Active() {
		return nil, &exitcode.Refusal{Rule: "breakglass", Reason: fmt.Sprintf("%s/%s has no active pause record (%s on %s): %s",
			bf.app, bf.env, breakglass.Path(bf.env, bf.app), ps.repo.base, why)}
	}
	return ps, nil
}

// commitBreakglass writes rec on the base branch by compare-and-swap; check
// runs on every tip tried (a retry re-reads what is really there).
func commitBreakglass(ctx context.Context, r *promoteRepo, rec *breakglass.Record, msg string, check func(prev *breakglass.Record) error) (string, error) {
	return commitBreakglassFiles(ctx, r, rec, nil, msg, check)
}

// commitBreakglassFiles is commitBreakglass with more files in the same
// commit (the evidence beside the record).
func commitBreakglassFiles(ctx context.Context, r *promoteRepo, rec *breakglass.Record, extra map[string][]byte, msg string, check func(prev *breakglass.Record) error) (string, error) {
	data, err := rec.Marshal()
	if err != nil {
		return "", err
	}
	return r.Update(ctx, r.base, pushAttempts, func(ctx context.Context, tip string) (map[string][]byte, string, error) {
		prev, err := readBreakglass(ctx, r, tip, rec.App, rec.Environment)
		if err != nil {
			return nil, "", err
		}
		if err := check(prev); err != nil {
			return nil, "", err
		}
		files := map[string][]byte{breakglass.Path(rec.Environment, rec.App): data}
		for p, d := range extra {
			files[p] = d
		}
		return files, msg, nil
	})
}

func breakglassError(err error) error {
	var ce *breakglass.ConflictError
	if errors.As(err, &ce) {
		return &exitcode.Refusal{Rule: breakglass.RuleController, Err: err}
	}
	return err
}

func newBreakglassPauseCommand(g *globals, stdout io.Writer) *cobra.Command {
	var (
		bf      breakglassFlags
		ticket  string
		expires time.Duration
	)
	cmd := &cobra.Command{
		Use:   "pause --repo DIR --app APP --env ENV --ticket T --expires DURATION",
		Short: "Suspend reconciliation of exactly one application and record it in Git",
		Long: `Suspend the reconciliation of one application: Argo CD (remove
spec.syncPolicy.automated of the Application; refused with guidance when a
parent app tracks it, or an ApplicationSet owns it and does not both ignore
its /spec/syncPolicy and preserve the break-glass annotations) or Flux (spec.suspend: true
on the Kustomization; refused when a parent Kustomization applies it).

The patch carries the resourceVersion that was read, so of two operators
pausing at once exactly one wins; the record breakglass/<env>/<app>.yaml is
then committed on the base branch by compare-and-swap (never forced) and
holds the source revision, every managed object's resourceVersion and
managedFields, the operator, the ticket and the expiry. A second pause while
one is active is refused.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := bf.check(); err != nil {
				return err
			}
			if ticket == "" || expires <= 0 {
				return exitcode.Usagef("--ticket and a positive --expires are required")
			}
			ctx := cmd.Context()
			ps, err := openPause(ctx, &bf)
			if err != nil {
				return err
			}
			r := ps.repo
			if prev := ps.rec; prev.Active() {
				return &exitcode.Refusal{Rule: "breakglass", Reason: fmt.Sprintf("%s/%s is already paused by %s (ticket %s, until %s): see %s", bf.app, bf.env, prev.Operator, prev.Ticket,
					prev.ExpiresAt.Format(time.RFC3339), breakglass.Path(bf.env, bf.app))}
			}
			c, err := bf.client()
			if err != nil {
				return err
			}
			now := time.Now()
			rec, err := breakglass.Pause(ctx, c, breakglass.Request{Target: bf.target(), App: bf.app, Env: bf.env,
				Operator: bf.operator, Ticket: ticket, Now: now, ExpiresAt: now.Add(expires)})
			if err != nil {
				return breakglassError(err)
			}
			msg := fmt.Sprintf("breakglass pause %s in %s\n\nTicket: %s\nOperator: %s\nExpires: %s\nSource-Revision: %s\n",
				bf.app, bf.env, ticket, bf.operator, rec.ExpiresAt.Format(time.RFC3339), rec.SourceRevision)
			sha, err := commitBreakglass(ctx, r, rec, msg, func(prev *breakglass.Record) error {
				if prev.Active() {
					return &exitcode.Refusal{Rule: "breakglass", Reason: fmt.Sprintf("%s/%s was paused first by %s (ticket %s)", bf.app, bf.env, prev.Operator, prev.Ticket)}
				}
				return nil
			})
			if err != nil {
				// Not recorded: do not leave an unrecorded pause behind.
				if uerr := breakglass.Undo(context.WithoutCancel(ctx), c, rec); uerr != nil {
					return fmt.Errorf("recording the pause failed (%w) and undoing it failed too: %s is paused without a record: %v", err, bf.target(), uerr)
				}
				return fmt.Errorf("recording the pause in %s failed, so the pause was undone (%s reconciles as before): %w", breakglass.Path(bf.env, bf.app), bf.target(), err)
			}
			g.log.Debug().Str("commit", sha).Msg("pause recorded")
			fmt.Fprintf(stdout, "paused %s (%s/%s) until %s, ticket %s\nrecorded %s at %s (%d live objects, source revision %s)\n",
				bf.target(), bf.app, bf.env, rec.ExpiresAt.Format(time.RFC3339), ticket, breakglass.Path(bf.env, bf.app), sha, len(rec.Objects), rec.SourceRevision)
			return nil
		},
	}
	bf.add(cmd)
	cmd.Flags().StringVar(&ticket, "ticket", "", "incident ticket (recorded)")
	cmd.Flags().DurationVar(&expires, "expires", 0, "how long the pause may last, e.g. 4h")
	return cmd
}

func newBreakglassResumeCommand(g *globals, stdout io.Writer) *cobra.Command {
	var (
		bf      breakglassFlags
		force   bool
		reason  string
		observe time.Duration
	)
	cmd := &cobra.Command{
		Use:   "resume --repo DIR --app APP --env ENV [--force --reason TEXT]",
		Short: "Re-enable reconciliation once the write-back is merged",
		Long: `Re-enable reconciliation of a paused application. Refused (exit 3) until the
write-back recorded in the pause record is merged into the base branch, because
resuming earlier makes the controller overwrite the live fix with the old
desired state; --force with --reason resumes anyway and records why.

After resuming, the controller object is read back (reconciliation on again:
the time T), and the live objects of the pause record are watched for
--observe (30s): an object whose generation moves more than once is being
written back and forth (the controller against another writer); it is
recorded and the command exits 3.

The resumed record and the evidence of the pause,
breakglass/<env>/<app>.evidence/<pausedAt>.json, are committed together on
the base branch by compare-and-swap. The evidence holds the five pieces: the
state before the pause (source revision, live resourceVersions), the manual
change (the write-back's classified changes), the write-back commit and the
base commit it was merged into, the resume, and the revocation of the
exception (reconciliation restored at T, objects watched, none flapping).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := bf.check(); err != nil {
				return err
			}
			if force && reason == "" {
				return exitcode.Usagef("--force needs --reason (it is recorded)")
			}
			ctx := cmd.Context()
			ps, err := openActivePause(ctx, &bf, "it is not paused, nothing to resume")
			if err != nil {
				return err
			}
			r, base, rec := ps.repo, ps.base, ps.rec
			merged := ""
			if !force {
				if merged, err = writebackMerged(ctx, r, rec, base); err != nil {
					return err
				}
			}
			c, err := bf.client()
			if err != nil {
				return err
			}
			restored, err := breakglass.Restore(ctx, c, rec)
			if err != nil {
				return breakglassError(err)
			}
			at := restored.At
			flapping, err := breakglass.Flapping(ctx, c, rec, observe, 0)
			if err != nil {
				return fmt.Errorf("%s is resumed in the cluster, but watching its objects failed (not recorded): %w", bf.target(), err)
			}
			rec.State = breakglass.Resumed
			rec.Resume = &breakglass.Resume{At: at, By: bf.operator, Force: force, Reason: reason, WritebackMerged: merged, Flapping: flapping}
			if observe > 0 {
				rec.Resume.ObservedFor = observe.String()
			}
			msg := fmt.Sprintf("breakglass resume %s in %s\n\nTicket: %s\nOperator: %s\nForced: %t\nReason: %s\nWriteback-Merged: %s\n",
				bf.app, bf.env, rec.Ticket, bf.operator, force, reason, merged)
			evidence, err := breakglass.NewEvidence(rec, restored).Marshal()
			if err != nil {
				return fmt.Errorf("%s is resumed in the cluster but its evidence is incomplete (not recorded): %w", bf.target(), err)
			}
			evPath := breakglass.EvidencePath(bf.env, bf.app, rec.PausedAt)
			msg += "Evidence: " + evPath + "\n"
			sha, err := commitBreakglassFiles(ctx, r, rec, map[string][]byte{evPath: evidence}, msg, func(prev *breakglass.Record) error {
				if !prev.Active() {
					return &exitcode.Refusal{Rule: "breakglass", Reason: fmt.Sprintf("%s/%s was resumed by someone else meanwhile", bf.app, bf.env)}
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("%s is resumed in the cluster but recording it failed: %w", bf.target(), err)
			}
			g.log.Debug().Str("commit", sha).Msg("resume recorded")
			fmt.Fprintf(stdout, "resumed %s (%s/%s) at %s; recorded %s and the evidence %s at %s\n", bf.target(), bf.app, bf.env,
				restored.At.Format(time.RFC3339), breakglass.Path(bf.env, bf.app), evPath, sha)
			if len(flapping) > 0 {
				return &exitcode.Refusal{Rule: "breakglass", Reason: fmt.Sprintf("resumed, but objects were written back and forth while watched for %s (something fights the desired state; recorded): %s",
					observe, strings.Join(flapping, "; "))}
			}
			return nil
		},
	}
	bf.add(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "resume although the write-back is not merged (needs --reason)")
	cmd.Flags().StringVar(&reason, "reason", "", "why a forced resume is safe (recorded)")
	cmd.Flags().DurationVar(&observe, "observe", 30*time.Second, "after resuming, watch the live objects this long; an object written more than once (back and forth) is recorded and exits 3 (0: do not watch)")
	return cmd
}

// writebackMerged returns the base commit containing the record's
// write-back, or a refusal when there is none or it is not merged.
func writebackMerged(ctx context.Context, r *promoteRepo, rec *breakglass.Record, base string) (string, error) {
	if rec.Writeback == nil {
		return "", &exitcode.Refusal{Rule: "breakglass", Reason: fmt.Sprintf("%s/%s has no write-back: run throughline breakglass writeback and merge it, or resume with --force --reason", rec.App, rec.Environment)}
	}
	if _, err := r.Git(ctx, "merge-base", "--is-ancestor", rec.Writeback.Commit, base); err == nil {
		return base, nil
	}
	// A squash or rebase merge: every file of the write-back is in base as
	// the write-back wrote it.
	files, err := r.Changed(ctx, rec.Writeback.Commit+"^", rec.Writeback.Commit)
	if err == nil && len(files) > 0 {
		args := append([]string{"diff", "--quiet", rec.Writeback.Commit, base, "--"}, files...)
		if _, err := r.Git(ctx, args...); err == nil {
			return base, nil
		}
	}
	return "", &exitcode.Refusal{Rule: "breakglass", Reason: fmt.Sprintf("the write-back %s (branch %s) is not merged into %s: merge it first, or resume with --force --reason",
		rec.Writeback.Commit, rec.Writeback.Branch, r.base)}
}

// writebackResult is what writeback found and did.
type writebackResult struct {
	Changes []breakglass.Change `json:"changes"`
	Branch  string              `json:"branch,omitempty"`
	Commit  string              `json:"commit,omitempty"`
	Files   []string            `json:"files,omitempty"`
	PR      string              `json:"pullRequest,omitempty"`
}

func newBreakglassWritebackCommand(g *globals, stdout io.Writer) *cobra.Command {
	var (
		bf                           breakglassFlags
		targetPath, output           string
		temporary, writers, ctlNames []string
		ff                           forgeFlags
	)
	cmd := &cobra.Command{
		Use:   "writeback --repo DIR --app APP --env ENV",
		Short: "Write the permanent live changes of a paused application back into its overlay, on a branch",
		Long: `Compare three states of every object of the paused application: the desired
state before the pause (the overlay rendered at the recorded source revision),
the live state now, and the proposed desired state (the overlay on the base
branch now). Status, defaulted fields (owned by no field manager), runtime
annotations, managedFields and fields of the GitOps controller's own manager
are not changes. Each remaining field (every managedFields entry kind: f:,
k: keyed list elements, v: set values, i: indexes) is classified:

  permanent        changed by an operator (a field manager that is not the
                   controller, not a known writer and not present at the pause,
                   or kubectl*): written back
  temporary        matches --temporary (and restartedAt, spec.paused): listed
  other-writer     owned by another legitimate writer (--writer, HPA/scale,
                   or any non-kubectl manager already present at the pause)
  already-desired  the base branch already has the live value
  conflict         the desired state moved at that field since the pause

Whole objects are compared too, and listed (never written back):

  live-only        tracked by the controller (Argo CD status.resources, Flux
                   status.inventory, or recorded at the pause), live, but not
                   in the desired state before the pause: made by hand
  deleted-live     in the desired state before the pause, but not live

The permanent changes become strategic-merge patches in the overlay
(breakglass-<kind>-<name>.yaml, added to patches:), committed on the branch
throughline/breakglass/<app>/<env>/<ticket> (compare-and-swap, never forced;
a PR/MR with --forge); the pause record on the base branch then names the
write-back, and resume waits for it to be merged. Without a pause record:
refused.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := bf.check(); err != nil {
				return err
			}
			if output != "text" && output != "json" {
				return exitcode.Usagef("-o %q: want text or json", output)
			}
			fc, err := ff.client()
			if err != nil {
				return err
			}
			if targetPath == "" {
				targetPath = path.Join("apps", bf.app, "overlays", bf.env)
			}
			ctx := cmd.Context()
			ps, err := openActivePause(ctx, &bf, "nothing was paused, so there is nothing to write back")
			if err != nil {
				return err
			}
			r, base, rec := ps.repo, ps.base, ps.rec
			c, err := bf.client()
			if err != nil {
				return err
			}
			res, err := writeback(ctx, r, c, rec, base, targetPath, breakglass.Compare{
				ControllerManagers: append(ctlNames, breakglass.DefaultControllerManagers...),
				OtherWriters:       append(writers, breakglass.DefaultOtherWriters...),
				Temporary:          append(temporary, breakglass.DefaultTemporary...),
			})
			if err != nil {
				return err
			}
			if fc != nil && res.Branch != "" {
				pr, err := fc.OpenPullRequest(ctx, forge.PullRequest{Title: fmt.Sprintf("breakglass write-back %s in %s (%s)", bf.app, bf.env, rec.Ticket),
					Head: res.Branch, Base: r.base, Body: writebackBody(rec, res)})
				if err != nil {
					return fmt.Errorf("branch %s pushed, but opening the pull request failed: %w", res.Branch, err)
				}
				res.PR = pr.URL
			}
			wb := &breakglass.Writeback{Branch: res.Branch, Commit: res.Commit, PR: res.PR}
			for _, ch := range res.Changes {
				wb.Changes = append(wb.Changes, ch.String())
			}
			wb.Classified = res.Changes
			rec.Writeback = wb
			msg := fmt.Sprintf("breakglass writeback %s in %s\n\nTicket: %s\nWriteback-Branch: %s\nWriteback-Commit: %s\n", bf.app, bf.env, rec.Ticket, res.Branch, res.Commit)
			if _, err := commitBreakglass(ctx, r, rec, msg, func(prev *breakglass.Record) error {
				if !prev.Active() {
					return &exitcode.Refusal{Rule: "breakglass", Reason: fmt.Sprintf("%s/%s was resumed meanwhile", bf.app, bf.env)}
				}
				return nil
			}); err != nil {
				return fmt.Errorf("write-back %s pushed, but recording it in %s failed: %w", res.Branch, breakglass.Path(bf.env, bf.app), err)
			}
			g.log.Debug().Str("branch", res.Branch).Int("changes", len(res.Changes)).Msg("write-back")
			if output == "json" {
				return promoteWriteJSON(stdout, res)
			}
			for _, ch := range res.Changes {
				fmt.Fprintln(stdout, ch.String())
			}
			if res.Branch == "" {
				fmt.Fprintf(stdout, "no permanent change to write back; recorded at %s\n", res.Commit)
				return nil
			}
			fmt.Fprintf(stdout, "write-back on branch %s at %s (%s)\n", res.Branch, res.Commit, strings.Join(res.Files, ", "))
			if res.PR != "" {
				fmt.Fprintf(stdout, "pull request %s\n", res.PR)
			}
			return nil
		},
	}
	bf.add(cmd)
	f := cmd.Flags()
	f.StringVar(&targetPath, "path", "", "environment overlay, relative to the repository (default apps/APP/overlays/ENV)")
	f.StringSliceVar(&temporary, "temporary", nil, `incident-only fields, "Kind/name:path" globs (e.g. "Deployment/web:spec.replicas"); repeatable`)
	f.StringSliceVar(&writers, "writer", nil, "field managers that are legitimate writers besides the controller; repeatable")
	f.StringSliceVar(&ctlNames, "controller-manager", nil, "field managers of the GitOps controller, besides argocd-controller and kustomize-controller")
	f.StringVarP(&output, "output", "o", "text", "output: text or json")
	ff.add(cmd)
	return cmd
}

// sourceCommit turns a controller's revision ("<sha>", Flux
// "main@sha1:<sha>") into a commit of the repository.
func sourceCommit(ctx context.Context, r *promoteRepo, rev string) (string, error) {
	if i := strings.LastIndex(rev, ":"); i >= 0 {
		rev = rev[i+1:]
	}
	if rev == "" {
		return "", &exitcode.Refusal{Rule: "breakglass", Reason: "the pause record has no source revision: the desired state before the pause is unknown"}
	}
	sha, err := r.Resolve(ctx, rev)
	if err != nil {
		return "", &exitcode.Refusal{Rule: "breakglass", Reason: fmt.Sprintf("source revision %s of the pause record is not in the repository: %v", rev, err)}
	}
	return sha, nil
}

func writeback(ctx context.Context, r *promoteRepo, c client.Client, rec *breakglass.Record, base, targetPath string, cmp breakglass.Compare) (*writebackResult, error) {
	src, err := sourceCommit(ctx, r, rec.SourceRevision)
	if err != nil {
		return nil, err
	}
	before, err := renderAt(ctx, r, src, targetPath)
	if err != nil {
		return nil, err
	}
	tree, cleanup, err := r.export(ctx, base)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	proposed, _, err := promoteRawRender(ctx, tree.root, targetPath)
	if err != nil {
		return nil, err
	}
	cmp.Before, cmp.Proposed = before, proposed
	cmp.Live = map[render.ID]map[string]any{}
	cmp.AtPause = map[string][]metav1.ManagedFieldsEntry{}
	for _, o := range rec.Objects {
		cmp.AtPause[o.Kind+" "+o.Namespace+"/"+o.Name] = o.ManagedFields
	}
	// The live state of every rendered object and of every object the
	// controller tracks (one outside the render was made by hand).
	if cmp.Tracked, err = breakglass.Tracked(ctx, c, rec); err != nil {
		return nil, err
	}
	ids := make([]render.ID, 0, len(before)+len(cmp.Tracked))
	for _, o := range before {
		ids = append(ids, o.ID())
	}
	for _, id := range append(ids, cmp.Tracked...) {
		key := id
		key.Version = ""
		if _, done := cmp.Live[key]; done {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(id.APIVersion())
		u.SetKind(id.Kind)
		if err := c.Get(ctx, types.NamespacedName{Namespace: id.Namespace, Name: id.Name}, u); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("read live %s: %w", id, err)
		}
		cmp.Live[key] = u.Object
	}
	changes, err := cmp.Run()
	if err != nil {
		return nil, err
	}
	res := &writebackResult{Changes: changes}
	patches := breakglass.Patches(changes)
	if len(patches) == 0 {
		res.Commit = base
		return res, nil
	}
	breakglass.SetAPIVersion(patches, before)
	kfile, err := kustomizationFile(ctx, tree.root, targetPath)
	if err != nil {
		return nil, err
	}
	kdata, err := os.ReadFile(filepath.Join(tree.root, filepath.FromSlash(kfile)))
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	var names []string
	for _, p := range patches {
		id := p.ID()
		name := "breakglass-" + slug(id.Kind) + "-" + slug(id.Name) + ".yaml"
		var buf bytes.Buffer
		fmt.Fprintf(&buf, "# Written back by throughline breakglass writeback (ticket %s, operator %s).\n", rec.Ticket, rec.Operator)
		if err := render.EncodeYAML(&buf, []render.Object{p}); err != nil {
			return nil, err
		}
		rel := path.Join(targetPath, name)
		files[rel] = buf.Bytes()
		names = append(names, name)
		res.Files = append(res.Files, rel)
	}
	kdata, err = addPatches(kdata, kfile, names)
	if err != nil {
		return nil, err
	}
	files[kfile] = kdata
	// The overlay with the patches must render the live values.
	for rel, data := range files {
		if err := os.WriteFile(filepath.Join(tree.root, filepath.FromSlash(rel)), data, 0o644); err != nil {
			return nil, err
		}
	}
	after, _, err := promoteRawRender(ctx, tree.root, targetPath)
	if err != nil {
		return nil, fmt.Errorf("the overlay with the write-back does not render: %w", err)
	}
	check := breakglass.Compare{Before: after, Live: cmp.Live, Proposed: after, AtPause: cmp.AtPause,
		ControllerManagers: cmp.ControllerManagers, OtherWriters: cmp.OtherWriters, Temporary: cmp.Temporary}
	left, err := check.Run()
	if err != nil {
		return nil, err
	}
	for _, ch := range left {
		if ch.Class == breakglass.Permanent {
			return nil, fmt.Errorf("the write-back patches do not reproduce the live state: %s", ch)
		}
	}
	if _, err := promoteDeclare(ctx, tree.root, targetPath, rec.Environment); err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("breakglass write-back %s in %s (%s)\n\nTicket: %s\nOperator: %s\nSource-Revision: %s\n", rec.App, rec.Environment, rec.Ticket, rec.Ticket, rec.Operator, rec.SourceRevision)
	for _, ch := range changes {
		msg += "Change: " + ch.String() + "\n"
	}
	sha, err := r.Commit(ctx, base, files, msg)
	if err != nil {
		return nil, err
	}
	branch := "throughline/breakglass/" + rec.App + "/" + rec.Environment + "/" + slug(rec.Ticket)
	if err := r.SetBranch(ctx, branch, "", sha); err != nil {
		return nil, fmt.Errorf("branch %s exists already (a write-back was proposed; merge or delete it): %w", branch, err)
	}
	res.Branch, res.Commit = branch, sha
	return res, nil
}

func renderAt(ctx context.Context, r *promoteRepo, rev, p string) ([]render.Object, error) {
	tree, cleanup, err := r.export(ctx, rev)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	objs, _, err := promoteRawRender(ctx, tree.root, p)
	return objs, err
}

var slugRE = regexp.MustCompile(`[^a-z0-9.-]+`)

func slug(s string) string {
	return strings.Trim(slugRE.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// addPatches appends "- path: NAME" entries to the kustomization's
// patches: list (created when missing), keeping comments.
func addPatches(data []byte, rel string, names []string) ([]byte, error) {
	rn, err := kyaml.Parse(string(data))
	if err != nil {
		return nil, &exitcode.InvalidInput{File: rel, Err: err}
	}
	list, err := rn.Pipe(kyaml.LookupCreate(kyaml.SequenceNode, "patches"))
	if err != nil {
		return nil, &exitcode.InvalidInput{File: rel, Err: err}
	}
	have := map[string]bool{}
	for _, e := range list.Content() {
		for i := 0; i+1 < len(e.Content); i += 2 {
			if e.Content[i].Value == "path" {
				have[e.Content[i+1].Value] = true
			}
		}
	}
	for _, n := range names {
		if have[n] {
			continue
		}
		entry := kyaml.NewMapRNode(&map[string]string{"path": n})
		if err := list.PipeE(kyaml.Append(entry.YNode())); err != nil {
			return nil, &exitcode.InvalidInput{File: rel, Err: err}
		}
	}
	s, err := rn.String()
	if err != nil {
		return nil, err
	}
	return []byte(s), nil
}

func writebackBody(rec *breakglass.Record, res *writebackResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Break-glass write-back of `%s` in `%s` (ticket %s, paused by %s at %s from revision `%s`).\n\n",
		rec.App, rec.Environment, rec.Ticket, rec.Operator, rec.PausedAt.Format("2006-01-02T15:04:05Z"), rec.SourceRevision)
	b.WriteString("| class | object | field | desired before | live |\n|---|---|---|---|---|\n")
	for _, c := range res.Changes {
		fmt.Fprintf(&b, "| %s | %s | `%s` | `%v` | `%v` |\n", c.Class, c.Object, c.Path, c.Before, c.Live)
	}
	b.WriteString("\nOnly the permanent changes are in this PR; resume (`throughline breakglass resume`) waits for its merge.\n")
	return b.String()
}
