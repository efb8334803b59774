package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/overlay"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/promotion/policyfile"
	"github.com/throughline-dev/throughline/registry"
	"github.com/throughline-dev/throughline/render"
)

const pinLong = `Resolve every image of the application PATH (default ".") that is not pinned by
digest and rewrite it in place, keeping the tag for readers:

  kustomization   the images: entry of PATH's kustomization becomes
                  newTag: "1.4.2@sha256:<digest>" (kustomize renders
                  name:1.4.2@sha256:<digest>); an image used by a base without
                  an entry gets one. Bases are never changed.
  plain manifests image: nginx:1.27 becomes image: nginx:1.27@sha256:<digest>.

Only the edited values change in each file: comments, order, quoting and
indentation are kept. Files are replaced atomically. Every change is printed.

--check changes nothing and asks no registry: it lists every unpinned image and
exits 3 when there is one. It decides as render does: an image that the
allow-list (--allow-list, default throughline-allowlist.yaml at the root) lets
through in the environment (--environment, default the directory name under
overlays/) is listed as ALLOWED, not refused, and pin leaves it alone; an
exception scoped to other environments does not hold.

--set NAME=TAG@sha256:<digest> asks no registry either: like kustomize edit set
image, it writes newTag: "TAG@sha256:<digest>" into the images: entry of NAME
in PATH's kustomization (adding the entry when a container of the application
or a patch of the kustomization uses NAME; replacing a pinned value, so a
release re-pins). The reference is validated as the policy validates images
(sha256 only), other images are left alone, the edit keeps the file's format
and the application is rendered again to check that every container of NAME
carries the new reference. NAME=NEWNAME:TAG@sha256:<digest> also writes
newName (the image moves to another repository). Repeat --set for several
images. Exit 2 for a malformed --set, 4 when no container uses NAME.

Remote Helm charts are pinned first (docs/charts.md): every oci:// or https://
chart of a kustomization's helmCharts, or of the dependencies of PATH/Chart.yaml
(an Argo CD Helm-style app), is resolved (OCI: the tag's manifest digest; HTTP:
index.yaml's digest, verified by downloading the .tgz) and written into
throughline-charts.lock.yaml beside the file that names it, in place. A version
range is refused (exit 3, floating-chart-version); a pinned version whose
package changed is refused naming both digests (exit 3, chart-version-moved).
With --check, an unpinned chart is listed and refused (exit 3, unpinned-chart).
--charts pins only the charts.`

const pinExample = `  throughline pin apps/checkout/overlays/staging
  throughline pin --check apps/checkout/overlays/staging   # PR job
  throughline pin --set ghcr.io/throughline-dev/throughline=v0.2.0@sha256:<digest> deploy/serve
  throughline pin --charts apps/web/overlays/staging   # remote Helm charts only`

// pinOptions are the flags of pin.
type pinOptions struct {
	rf    registryFlags
	root  string
	check bool
	set   imageSetFlag
	pol   overlay.PinPolicy
	// chartsOnly: pin the remote Helm charts, not the images.
	chartsOnly bool
}

func (o *pinOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.root, "root", "", "repository root (default: the enclosing Git work tree, else PATH)")
	f.BoolVar(&o.check, "check", false, "change nothing; exit 3 when any image is not pinned by digest")
	f.StringVar(&o.pol.AllowListFile, "allow-list", "", "allow-list file relative to the root (default "+policy.AllowListFile+")")
	f.StringVar(&o.pol.Environment, "environment", "", "environment the allow-list is matched in "+
		"(default: the registry's environment of PATH, none for a path it does not list; "+
		"without a registry the directory name under overlays/); with a registry must be PATH's")
	f.BoolVar(&o.chartsOnly, "charts", false, "pin only the remote Helm charts (into throughline-charts.lock.yaml), not the images")
	f.Var(&o.set, "set", "write TAG@sha256:<digest> (and NEWNAME) into the images: entry of NAME (repeatable; no registry is asked)")
}

func newPinCommand(g *globals, stdout io.Writer) *cobra.Command {
	var o pinOptions
	cmd := leaf(&cobra.Command{
		Use:     "pin [PATH]",
		Short:   "Rewrite image tags to digests in a kustomization or plain manifests, in place",
		Long:    pinLong,
		Example: pinExample,
		Args:    maxArgs(1),
	}, o.addFlags, func(ctx context.Context, args []string) error { return o.run(ctx, g, args, stdout) })
	o.rf.add(cmd)
	return cmd
}

func (o *pinOptions) run(ctx context.Context, g *globals, args []string, stdout io.Writer) error {
	path := "."
	if len(args) == 1 {
		path = args[0]
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return exitcode.Usagef("path %s: %v", path, err)
	}
	root := o.root
	if root == "" {
		if root, err = render.FindRoot(abs); err != nil {
			return err
		}
	}
	in, err := policyfile.JudgedIn(root, abs, "", o.pol.Environment, 0)
	if err != nil {
		return err
	}
	logUnlisted(g, in)
	o.pol.Environment, o.pol.DirectoryEnvironment = in.Environment, in.ByDirectory
	opts := render.Options{Root: root, Path: abs}
	if done, err := o.pinCharts(ctx, root, abs, path, stdout); err != nil || done {
		return err
	}
	if len(o.set.sets) > 0 {
		if o.check {
			return exitcode.Usagef("--set and --check exclude each other")
		}
		return runSet(ctx, opts, o.set.sets, stdout)
	}
	p, err := overlay.PlanPin(ctx, opts, o.pol)
	if err != nil {
		return err
	}
	if o.check {
		return pinCheck(p, path, stdout)
	}
	if len(p.Unpinned) == 0 {
		_, err := fmt.Fprintf(stdout, "nothing to pin: every image of %s is pinned by digest\n", p.App.RelDir())
		return err
	}
	changes, err := p.Run(ctx, o.resolve)
	// What was written is said even when a later step failed.
	for _, ch := range changes {
		fmt.Fprintln(stdout, ch)
		g.log.Debug().Str("change", ch).Msg("pinned")
	}
	return err
}

// pinCheck lists every allow-listed and unpinned image of p and refuses
// when there is an unpinned one.
func pinCheck(p *overlay.Pin, path string, stdout io.Writer) error {
	for _, a := range p.Allowed {
		fmt.Fprintf(stdout, "ALLOWED in %s %s\n", envName(p.Environment), a)
	}
	if len(p.Unpinned) == 0 && len(p.Allowed) > 0 {
		_, err := fmt.Fprintf(stdout, "OK every other image of %s is pinned by digest\n", p.App.RelDir())
		return err
	}
	if len(p.Unpinned) == 0 {
		_, err := fmt.Fprintf(stdout, "OK every image of %s is pinned by digest\n", p.App.RelDir())
		return err
	}
	for _, u := range p.Unpinned {
		fmt.Fprintln(stdout, "UNPINNED", u.String())
	}
	return exitcode.Refuse(overlay.RuleUnpinned, "%d unpinned image(s) in %s (listed on stdout); run throughline pin %s",
		len(p.Unpinned), p.App.RelDir(), path)
}

// envName is env for messages ("no environment" when empty).
func envName(env string) string {
	if env == "" {
		return "no environment"
	}
	return "environment " + env
}

// resolve asks the registry for the digest of every reference.
func (o *pinOptions) resolve(ctx context.Context, refs []string) (map[string]string, error) {
	c, err := o.rf.client()
	if err != nil {
		return nil, err
	}
	resolved := map[string]string{}
	var errs []error
	for i, r := range c.ResolveAll(ctx, refs, false) {
		if r.Err != nil {
			errs = append(errs, r.Err)
			continue
		}
		resolved[refs[i]] = r.Descriptor.Digest
	}
	return resolved, registryError(registry.JoinErrors(errs))
}
