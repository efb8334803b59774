package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/cli"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/promotion/policyfile"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile/promql"
)

const renderLong = `Render the application directory PATH (default ".") exactly as the Argo CD
plugin does: a kustomization (in-process, plugins and Helm off, confined to the
repository root) or a directory of YAML/JSON manifests. Every policy violation is
listed at once (exit 3); unreadable input exits 4.

The repository root is the enclosing Git work tree, else PATH; --root overrides.`

// renderOptions are the flags of throughline render.
type renderOptions struct {
	root, output, app, env, namespace, allowList string
	hashOnly, writeAcceptance, checkAcceptance   bool
	maxFileSize                                  int64
}

func (o *renderOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.root, "root", "", "repository root (default: the enclosing Git work tree, else PATH)")
	outputFlag(f, &o.output, "output format: yaml (a stream) or json (a v1 List)", "yaml", "json")
	f.BoolVar(&o.hashOnly, "hash", false, "print only the rendered hash")
	f.BoolVar(&o.writeAcceptance, "write-acceptance", false, "write the Acceptance into the overlay as "+acceptance.File+" (the Flux path)")
	f.BoolVar(&o.checkAcceptance, "check-acceptance", false, "exit 3 when the committed Acceptance does not match the render")
	f.StringVar(&o.app, "app", "", "application name (default: the registry's app of the path, else the directory name)")
	f.StringVar(&o.env, "environment", "", "environment "+
		"(default: the registry's environment of PATH, none for a path it does not list; "+
		"without a registry the directory name under overlays/); with a registry must be PATH's")
	f.StringVar(&o.namespace, "namespace", "", "namespace of the Acceptance object")
	f.StringVar(&o.allowList, "allow-list", "", "allow-list file relative to the root (default "+policy.AllowListFile+")")
	f.Int64Var(&o.maxFileSize, "max-file-size", render.DefaultMaxFileSize, "refuse any input file larger than this many bytes")
}

func newRenderCommand(g *globals, stdout io.Writer) *cobra.Command {
	var o renderOptions
	return leaf(&cobra.Command{
		Use:   "render [PATH]",
		Short: "Render an application, apply policy and print its objects and Acceptance",
		Long:  renderLong,
		Example: `  throughline render examples/gitops-env/apps/checkout/overlays/staging
  throughline render --hash apps/checkout/overlays/production
  throughline render --write-acceptance apps/checkout/overlays/production   # Flux
  throughline render --check-acceptance apps/checkout/overlays/production   # PR job`,
		Args: maxArgs(1),
	}, o.addFlags, func(ctx context.Context, args []string) error { return o.run(ctx, g, stdout, args) })
}

func (o *renderOptions) run(ctx context.Context, g *globals, stdout io.Writer, args []string) error {
	path := "."
	if len(args) == 1 {
		path = args[0]
	}
	d, err := o.declare(ctx, g, path)
	if err != nil {
		return err
	}
	logExceptions(g, d.Policy.Exceptions)
	g.log.Info().Str("app", d.Acceptance.Spec.App).Str("path", d.App.RelDir()).
		Int("objects", len(d.Objects)).Str("renderedHash", d.Hash).Msg("rendered")
	switch {
	case o.checkAcceptance:
		if why := d.Stale(); why != "" {
			return &exitcode.Refusal{Rule: "stale-acceptance", Reason: fmt.Sprintf(
				"%s: the committed Acceptance is stale: %s; run throughline render --write-acceptance %s", d.App.RelDir(), why, path)}
		}
		g.log.Info().Str("path", d.App.RelDir()).Msg("committed Acceptance is current")
		return nil
	case o.writeAcceptance:
		if err := d.WriteFile(); err != nil {
			return err
		}
	}
	if o.hashOnly {
		_, err := fmt.Fprintln(stdout, d.Hash)
		return err
	}
	if o.writeAcceptance {
		return nil
	}
	return printRender(stdout, o.output, d)
}

// declare checks the flags and renders path with every policy rule.
func (o *renderOptions) declare(ctx context.Context, g *globals, path string) (*acceptance.Declaration, error) {
	if o.writeAcceptance && o.checkAcceptance {
		return nil, exitcode.Usagef("--write-acceptance and --check-acceptance exclude each other")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, exitcode.Usagef("path %s: %v", path, err)
	}
	root := o.root
	if root == "" {
		if root, err = render.FindRoot(abs); err != nil {
			return nil, err
		}
	}
	in, err := policyfile.JudgedIn(root, abs, o.app, o.env, o.maxFileSize)
	if err != nil {
		return nil, err
	}
	logUnlisted(g, in)
	return acceptance.Declare(ctx, acceptance.Request{
		Render:               render.Options{Root: root, Path: abs, MaxFileSize: o.maxFileSize, Charts: chartSource()},
		AllowListFile:        o.allowList,
		App:                  cmp.Or(o.app, in.App),
		Environment:          in.Environment,
		DirectoryEnvironment: in.ByDirectory,
		Namespace:            o.namespace,
		Renderer:             buildVersion(),
		ParseQuery:           promql.Parse,
	})
}

func logExceptions(g *globals, exs []policy.Exception) { cli.LogExceptions(g.log, exs) }

func printRender(w io.Writer, output string, d *acceptance.Declaration) error {
	acc, err := acceptance.ToObject(&d.Acceptance)
	if err != nil {
		return err
	}
	objs := append(append([]render.Object{}, d.Objects...), acc)
	if output == "yaml" {
		return render.EncodeYAML(w, objs)
	}
	items := make([]map[string]any, len(objs))
	for i, o := range objs {
		items[i] = o.Map
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}); err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	return nil
}

// logUnlisted notes a path the registry does not list.
func logUnlisted(g *globals, in policyfile.Judged) {
	if in.Unlisted != "" {
		g.log.Info().Msg(in.Unlisted)
	}
}
