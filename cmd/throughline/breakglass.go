package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/breakglass"
	"github.com/throughline-dev/throughline/breakglass/live"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
)

const breakglassLong = `Break-glass suspends the reconciliation of exactly one application so that an
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

See docs/breakglass.md.`

func newBreakglassCommand(g *globals, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "breakglass",
		Short: "Pause reconciliation of one application for an incident, write the live changes back, resume",
		Long:  breakglassLong,
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
	f.StringVar(&b.env, "env", "", "environment (one of the environment registry's, when throughline-policy.yaml declares any)")
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

// open opens the repository of b (fetching it) and the break-glass session
// of its app and environment on the base branch.
func (b *breakglassFlags) open(ctx context.Context) (*live.Session, error) {
	r, err := gitops.Open(ctx, b.repo)
	if err != nil {
		return nil, err
	}
	return live.Open(ctx, r, b.app, b.env, b.target(), b.operator)
}

const breakglassPauseLong = `Suspend the reconciliation of one application: Argo CD (remove
spec.syncPolicy.automated of the Application; refused with guidance when a
parent app tracks it, or an ApplicationSet owns it and does not both ignore
its /spec/syncPolicy and preserve the break-glass annotations) or Flux (spec.suspend: true
on the Kustomization; refused when a parent Kustomization applies it).

The patch carries the resourceVersion that was read, so of two operators
pausing at once exactly one wins; the record breakglass/<env>/<app>.yaml is
then committed on the base branch by compare-and-swap (never forced) and
holds the source revision, every managed object's resourceVersion and
managedFields, the operator, the ticket and the expiry. A second pause while
one is active is refused.

When throughline-policy.yaml (at the base branch) declares environments, the
controller object must deploy APP in ENV by that registry: its source path
ENV's overlay of APP, its destination namespace (Application
spec.destination.namespace, Kustomization spec.targetNamespace) one of ENV's
namespaces; otherwise the pause is refused (exit 3) before anything is patched.`

// pauseOptions are the flags of breakglass pause.
type pauseOptions struct {
	bf      breakglassFlags
	ticket  string
	expires time.Duration
}

func (o *pauseOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.ticket, "ticket", "", "incident ticket (recorded)")
	f.DurationVar(&o.expires, "expires", 0, "how long the pause may last, e.g. 4h")
}

func newBreakglassPauseCommand(g *globals, stdout io.Writer) *cobra.Command {
	var o pauseOptions
	cmd := leaf(&cobra.Command{
		Use:   "pause --repo DIR --app APP --env ENV --ticket T --expires DURATION",
		Short: "Suspend reconciliation of exactly one application and record it in Git",
		Long:  breakglassPauseLong,
	}, o.addFlags, func(ctx context.Context, _ []string) error { return o.run(ctx, g, stdout) })
	o.bf.add(cmd)
	return cmd
}

func (o *pauseOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	bf := &o.bf
	if err := bf.check(); err != nil {
		return err
	}
	if o.ticket == "" || o.expires <= 0 {
		return exitcode.Usagef("--ticket and a positive --expires are required")
	}
	s, err := bf.open(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	rec, sha, err := s.Pause(ctx, bf.kf.client, o.ticket, now, now.Add(o.expires))
	if err != nil {
		return err
	}
	g.log.Debug().Str("commit", sha).Msg("pause recorded")
	fmt.Fprintf(stdout, "paused %s (%s/%s) until %s, ticket %s\nrecorded %s at %s (%d live objects, source revision %s)\n",
		bf.target(), bf.app, bf.env, rec.ExpiresAt.Format(time.RFC3339), o.ticket, breakglass.Path(bf.env, bf.app), sha,
		len(rec.Objects), rec.SourceRevision)
	return nil
}

const breakglassResumeLong = `Re-enable reconciliation of a paused application. Refused (exit 3) until the
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
exception (reconciliation restored at T, objects watched, none flapping).`

// resumeOptions are the flags of breakglass resume.
type resumeOptions struct {
	bf      breakglassFlags
	force   bool
	reason  string
	observe time.Duration
}

func (o *resumeOptions) addFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.force, "force", false, "resume although the write-back is not merged (needs --reason)")
	f.StringVar(&o.reason, "reason", "", "why a forced resume is safe (recorded)")
	f.DurationVar(&o.observe, "observe", 30*time.Second,
		"after resuming, watch the live objects this long; an object written more than once (back and forth) is recorded and exits 3 (0: do not watch)")
}

func newBreakglassResumeCommand(g *globals, stdout io.Writer) *cobra.Command {
	var o resumeOptions
	cmd := leaf(&cobra.Command{
		Use:   "resume --repo DIR --app APP --env ENV [--force --reason TEXT]",
		Short: "Re-enable reconciliation once the write-back is merged",
		Long:  breakglassResumeLong,
	}, o.addFlags, func(ctx context.Context, _ []string) error { return o.run(ctx, g, stdout) })
	o.bf.add(cmd)
	return cmd
}

func (o *resumeOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	bf := &o.bf
	if err := bf.check(); err != nil {
		return err
	}
	if o.force && o.reason == "" {
		return exitcode.Usagef("--force needs --reason (it is recorded)")
	}
	s, err := bf.open(ctx)
	if err != nil {
		return err
	}
	res, err := s.Resume(ctx, bf.kf.client, live.ResumeRequest{Force: o.force, Reason: o.reason, Observe: o.observe})
	if err != nil {
		return err
	}
	g.log.Debug().Str("commit", res.Commit).Msg("resume recorded")
	fmt.Fprintf(stdout, "resumed %s (%s/%s) at %s; recorded %s and the evidence %s at %s\n", bf.target(), bf.app, bf.env,
		res.At.Format(time.RFC3339), breakglass.Path(bf.env, bf.app), res.Evidence, res.Commit)
	if len(res.Flapping) > 0 {
		return exitcode.Refuse(breakglass.RulePause,
			"resumed, but objects were written back and forth while watched for %s (something fights the desired state; recorded): %s",
			o.observe, strings.Join(res.Flapping, "; "))
	}
	return nil
}

const breakglassWritebackLong = `Compare three states of every object of the paused application: the desired
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
refused.`

// writebackOptions are the flags of breakglass writeback.
type writebackOptions struct {
	bf                           breakglassFlags
	ff                           forgeFlags
	targetPath, output           string
	temporary, writers, ctlNames []string
}

func (o *writebackOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.targetPath, "path", "", "environment overlay, relative to the repository "+
		"(default: the environment registry's, else apps/APP/overlays/ENV); must be ENV's")
	f.StringSliceVar(&o.temporary, "temporary", nil, `incident-only fields, "Kind/name:path" globs (e.g. "Deployment/web:spec.replicas"); repeatable`)
	f.StringSliceVar(&o.writers, "writer", nil, "field managers that are legitimate writers besides the controller; repeatable")
	f.StringSliceVar(&o.ctlNames, "controller-manager", nil,
		"field managers of the GitOps controller, besides argocd-controller and kustomize-controller")
	outputFlag(f, &o.output, "output: text or json", "text", "json")
}

func newBreakglassWritebackCommand(g *globals, stdout io.Writer) *cobra.Command {
	var o writebackOptions
	cmd := leaf(&cobra.Command{
		Use:   "writeback --repo DIR --app APP --env ENV",
		Short: "Write the permanent live changes of a paused application back into its overlay, on a branch",
		Long:  breakglassWritebackLong,
	}, o.addFlags, func(ctx context.Context, _ []string) error { return o.run(ctx, g, stdout) })
	o.bf.add(cmd)
	o.ff.add(cmd)
	return cmd
}

func (o *writebackOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	bf := &o.bf
	if err := bf.check(); err != nil {
		return err
	}
	fc, err := o.ff.client()
	if err != nil {
		return err
	}
	s, err := bf.open(ctx)
	if err != nil {
		return err
	}
	res, err := s.Writeback(ctx, bf.kf.client, breakglass.WritebackOptions{Path: o.targetPath, Renderer: buildVersion(),
		Compare: breakglass.Compare{
			ControllerManagers: append(o.ctlNames, breakglass.DefaultControllerManagers...),
			OtherWriters:       append(o.writers, breakglass.DefaultOtherWriters...),
			Temporary:          append(o.temporary, breakglass.DefaultTemporary...),
		},
	}, fc)
	if err != nil {
		return err
	}
	g.log.Debug().Str("branch", res.Branch).Int("changes", len(res.Changes)).Msg("write-back")
	return o.print(stdout, res)
}

// print writes the write-back's changes, branch and pull request.
func (o *writebackOptions) print(stdout io.Writer, res *breakglass.WritebackResult) error {
	if o.output == "json" {
		return writeJSON(stdout, res)
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
}
