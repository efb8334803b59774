package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/atomicfile"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
)

// AcceptanceFile is the file --write-acceptance writes into an overlay.
const AcceptanceFile = "throughline-acceptance.yaml"

func newRenderCommand(g *globals, stdout io.Writer) *cobra.Command {
	var (
		root, output, app, env, namespace, allowList string
		hashOnly, writeAcceptance, checkAcceptance   bool
		maxFileSize                                  int64
	)
	cmd := &cobra.Command{
		Use:   "render [PATH]",
		Short: "Render an application, apply policy and print its objects and Acceptance",
		Long: `Render the application directory PATH (default ".") exactly as the Argo CD
plugin does: a kustomization (in-process, plugins and Helm off, confined to the
repository root) or a directory of YAML/JSON manifests. Every policy violation is
listed at once (exit 3); unreadable input exits 4.

The repository root is the enclosing Git work tree, else PATH; --root overrides.`,
		Example: `  throughline render examples/gitops-env/apps/checkout/overlays/staging
  throughline render --hash apps/checkout/overlays/production
  throughline render --write-acceptance apps/checkout/overlays/production   # Flux
  throughline render --check-acceptance apps/checkout/overlays/production   # PR job`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "."
			if len(args) == 1 {
				path = args[0]
			}
			if output != "yaml" && output != "json" {
				return exitcode.Usagef("-o %q: want yaml or json", output)
			}
			if writeAcceptance && checkAcceptance {
				return exitcode.Usagef("--write-acceptance and --check-acceptance exclude each other")
			}
			abs, err := filepath.Abs(path)
			if err != nil {
				return exitcode.Usagef("path %s: %v", path, err)
			}
			if root == "" {
				if root, err = render.FindRoot(abs); err != nil {
					return err
				}
			}
			d, err := acceptance.Declare(cmd.Context(), acceptance.Request{
				Render:        render.Options{Root: root, Path: abs, MaxFileSize: maxFileSize},
				AllowListFile: allowList,
				App:           app,
				Environment:   env,
				Namespace:     namespace,
				Renderer:      buildVersion(),
			})
			if err != nil {
				return err
			}
			logExceptions(g, d.Policy.Exceptions)
			g.log.Info().Str("app", d.Acceptance.Spec.App).Str("path", d.App.RelDir()).
				Int("objects", len(d.Objects)).Str("renderedHash", d.Hash).Msg("rendered")
			switch {
			case checkAcceptance:
				if why := d.Stale(); why != "" {
					return &exitcode.Refusal{Rule: "stale-acceptance", Reason: fmt.Sprintf("%s: the committed Acceptance is stale: %s; run throughline render --write-acceptance %s", d.App.RelDir(), why, path)}
				}
				g.log.Info().Str("path", d.App.RelDir()).Msg("committed Acceptance is current")
				return nil
			case writeAcceptance:
				if err := writeAcceptanceFile(d); err != nil {
					return err
				}
			}
			if hashOnly {
				_, err := fmt.Fprintln(stdout, d.Hash)
				return err
			}
			if writeAcceptance {
				return nil
			}
			return printRender(stdout, output, d)
		},
	}
	f := cmd.Flags()
	f.StringVar(&root, "root", "", "repository root (default: the enclosing Git work tree, else PATH)")
	f.StringVarP(&output, "output", "o", "yaml", "output format: yaml (a stream) or json (a v1 List)")
	f.BoolVar(&hashOnly, "hash", false, "print only the rendered hash")
	f.BoolVar(&writeAcceptance, "write-acceptance", false, "write the Acceptance into the overlay as "+AcceptanceFile+" (the Flux path)")
	f.BoolVar(&checkAcceptance, "check-acceptance", false, "exit 3 when the committed Acceptance does not match the render")
	f.StringVar(&app, "app", "", "application name (default: the directory name)")
	f.StringVar(&env, "environment", "", "environment (default: the directory name under overlays/)")
	f.StringVar(&namespace, "namespace", "", "namespace of the Acceptance object")
	f.StringVar(&allowList, "allow-list", "", "allow-list file relative to the root (default "+policy.AllowListFile+")")
	f.Int64Var(&maxFileSize, "max-file-size", render.DefaultMaxFileSize, "refuse any input file larger than this many bytes")
	return cmd
}

func logExceptions(g *globals, exs []policy.Exception) {
	for _, ex := range exs {
		g.log.Warn().Str("image", ex.Image).Str("object", ex.Object).Str("field", ex.Field).
			Str("pattern", ex.Pattern).Str("reason", ex.Reason).Msg("allow-list exception used: image not pinned by digest")
	}
}

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

// writeAcceptanceFile writes the Acceptance into the overlay and, for a
// kustomization, lists it in resources (keeping comments and formatting).
func writeAcceptanceFile(d *acceptance.Declaration) error {
	a := d.Acceptance
	a.Spec.SourceRevision = "" // a commit cannot name itself
	obj, err := acceptance.ToObject(&a)
	if err != nil {
		return err
	}
	n, err := kyaml.FromMap(obj.Map)
	if err != nil {
		return fmt.Errorf("encoding Acceptance: %w", err)
	}
	body := "# Written by `throughline render --write-acceptance`; do not edit.\n" +
		"# The PR job runs `throughline render --check-acceptance` and fails when it is stale.\n" + n.MustString()
	target := filepath.Join(d.App.Dir, AcceptanceFile)
	if err := atomicfile.Write(target, []byte(body), 0o644); err != nil {
		return err
	}
	if d.App.Mode != render.ModeKustomize {
		return nil
	}
	return addKustomizationResource(d.App, AcceptanceFile)
}

func addKustomizationResource(app *render.App, resource string) error {
	kfile := filepath.Join(app.FS.Root(), filepath.FromSlash(app.Kustomizations[0].File))
	data, err := os.ReadFile(kfile)
	if err != nil {
		return fmt.Errorf("reading %s: %w", app.Kustomizations[0].File, err)
	}
	rn, err := kyaml.Parse(string(data))
	if err != nil {
		return &exitcode.InvalidInput{File: app.Kustomizations[0].File, Err: err}
	}
	list, err := rn.Pipe(kyaml.LookupCreate(kyaml.SequenceNode, "resources"))
	if err != nil {
		return &exitcode.InvalidInput{File: app.Kustomizations[0].File, Err: fmt.Errorf("field resources: %w", err)}
	}
	for _, e := range list.YNode().Content {
		if e.Value == resource {
			return nil
		}
	}
	if err := list.PipeE(kyaml.Append(kyaml.NewScalarRNode(resource).YNode())); err != nil {
		return fmt.Errorf("adding %s to %s: %w", resource, app.Kustomizations[0].File, err)
	}
	out, err := rn.String()
	if err != nil {
		return fmt.Errorf("encoding %s: %w", app.Kustomizations[0].File, err)
	}
	return atomicfile.Write(kfile, []byte(out), 0o644)
}
