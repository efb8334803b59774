package gate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/render"
)

// ClustersDir is the directory whose every controller object is checked,
// whether or not an environment's controllers patterns claim its file.
const ClustersDir = "clusters"

// The controller objects: an Argo CD Application or ApplicationSet, a
// Flux Kustomization, and the Argo CD AppProject that bounds what an
// Application may deploy.
const (
	argoGroup = "argoproj.io"
	fluxGroup = "kustomize.toolkit.fluxcd.io"
)

// controller is one controller object of a file.
type controller struct {
	file string
	// kind is Application, ApplicationSet, AppProject or Kustomization
	// (Flux's).
	kind string
	// name is "<kind> <namespace>/<name>".
	name string
	obj  map[string]any
}

// parseControllers reads the controller objects of one YAML (or JSON)
// file of any number of documents; other objects are not controllers.
func parseControllers(file string, data []byte) ([]controller, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []controller
	for i := 0; ; i++ {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		id := render.Object{Map: m}.ID()
		switch {
		case id.Group == argoGroup && (id.Kind == "Application" || id.Kind == "ApplicationSet" || id.Kind == "AppProject"),
			id.Group == fluxGroup && id.Kind == "Kustomization":
			out = append(out, controller{file: file, kind: id.Kind, name: id.Kind + " " + id.Namespace + "/" + id.Name, obj: m})
		}
	}
}

// controllerFile reports whether f may hold controller objects: a YAML or
// JSON file under ClustersDir or claimed by an environment.
func controllerFile(f string, owners []*environment.Environment) bool {
	if len(owners) == 0 && !strings.HasPrefix(f, ClustersDir+"/") {
		return false
	}
	ext := path.Ext(f)
	return ext == ".yaml" || ext == ".yml" || ext == ".json"
}

// owners are the environments whose controllers patterns claim f.
func (c *repoCheck) owners(f string) []*environment.Environment {
	var out []*environment.Environment
	for _, name := range c.reg.Names() {
		if e, _ := c.reg.Get(name); e.OwnsController(f) {
			out = append(out, e)
		}
	}
	return out
}

// controllers checks every controller object of rv: those of the files
// under ClustersDir or claimed by an environment (read from Git at t's
// revision: the blob a controller applies) are bound to their
// environment, and a controller object anywhere else in the repository
// (read from t's export, never through a link) that deploys a registered
// overlay is refused. Two controllers of one kind deploying one overlay
// to one cluster are refused too.
func (c *repoCheck) controllers(ctx context.Context, t *gitops.Tree, rv *revision) ([]Finding, error) {
	var out []Finding
	deploys := map[deployment][]controller{}
	for _, f := range rv.files {
		owners := c.owners(f)
		claimed := controllerFile(f, owners)
		cs, err := c.readControllers(ctx, t, f, claimed)
		if err != nil {
			return nil, err
		}
		for _, ctl := range cs {
			if !claimed {
				out = append(out, c.stray(ctl, rv)...)
				continue
			}
			b := c.bind(ctl, owners, rv)
			out = append(out, b.out...)
			slices.Sort(b.bound)
			for _, p := range slices.Compact(b.bound) {
				k := deployment{env: b.owner.Name, cluster: b.owner.ClusterName(), path: p}
				deploys[k] = append(deploys[k], ctl)
			}
		}
	}
	return append(out, duplicateControllers(deploys)...), nil
}

// readControllers reads the controller objects of the file f at t's
// revision. A claimed file is read from Git (readClaimed) and must parse
// (exit 4 naming it); any other YAML or JSON file is read through the
// tree's one bounded reader (no link followed, the render's size and alias
// limits), looked at only when it is a regular file naming a controller's
// API group, and one that does not parse is no object a controller could
// apply from plain YAML.
func (c *repoCheck) readControllers(ctx context.Context, t *gitops.Tree, f string, claimed bool) ([]controller, error) {
	if claimed {
		data, err := c.readClaimed(ctx, t.Rev, f)
		if err != nil {
			return nil, err
		}
		cs, err := parseControllers(f, data)
		if err != nil {
			return nil, exitcode.InvalidFile(f, err)
		}
		return cs, nil
	}
	if ext := path.Ext(f); ext != ".yaml" && ext != ".yml" && ext != ".json" || !t.IsFile(f) {
		return nil, nil
	}
	data, err := t.OptionalFile(f)
	if err != nil {
		return nil, fmt.Errorf("reading controller file %s at %s: %w", f, t.Rev, err)
	}
	if !bytes.Contains(data, []byte(argoGroup)) && !bytes.Contains(data, []byte(fluxGroup)) {
		return nil, nil
	}
	cs, _ := parseControllers(f, data)
	return cs, nil
}

// readClaimed reads the claimed controller file f at rev from Git, once
// for the controllers and the judges steps (c.blobs): the blob a
// controller applies, not the export (.gitattributes can change an
// export's content: export-ignore, export-subst), bounded as the render
// reads a file (render.DefaultMaxFileSize, render.CheckYAML). A symbolic
// link is invalid input naming it (readGit).
func (c *repoCheck) readClaimed(ctx context.Context, rev, f string) ([]byte, error) {
	if data, ok := c.blobs[rev][f]; ok {
		return data, nil
	}
	data, found, err := readGit(ctx, c.r, rev, f)
	switch {
	case err != nil:
		return nil, err
	case !found: // listed, but no blob: a submodule
		return nil, exitcode.InvalidFile(f, fmt.Errorf("at %s: not a regular file", gitrepo.Short(rev)))
	case len(data) > render.DefaultMaxFileSize:
		return nil, exitcode.InvalidFile(f, fmt.Errorf("at %s: %w: %d bytes, limit %d", gitrepo.Short(rev), render.ErrTooLarge, len(data),
			render.DefaultMaxFileSize))
	}
	if err := render.CheckYAML(data); err != nil {
		return nil, exitcode.InvalidFile(f, fmt.Errorf("at %s: %w", gitrepo.Short(rev), err))
	}
	if c.blobs[rev] == nil {
		c.blobs[rev] = map[string][]byte{}
	}
	c.blobs[rev][f] = data
	return data, nil
}

// stray refuses a controller object in a file no environment claims
// (outside ClustersDir) that deploys a registered overlay: an Application
// under platform/, an app-of-apps in an overlay.
func (c *repoCheck) stray(ctl controller, rv *revision) []Finding {
	var out []Finding
	if ctl.kind == "AppProject" {
		return c.strayProject(ctl)
	}
	spec, _ := ctl.obj["spec"].(map[string]any)
	var paths [][2]string // field, path
	switch ctl.kind {
	case "Kustomization":
		paths = append(paths, [2]string{"spec.path", str(spec, "path")})
	case "ApplicationSet":
		var repos []string
		for _, n := range c.reg.Names() {
			if e, _ := c.reg.Get(n); e.Binding != nil {
				repos = append(repos, e.Binding.RepoURLs...)
			}
		}
		if apps, why := c.expandAppSet(ctl, rv, repos); why == "" {
			for _, app := range apps {
				out = append(out, c.stray(app, rv)...)
			}
			return out
		}
		tmpl, _ := spec["template"].(map[string]any)
		spec, _ = tmpl["spec"].(map[string]any)
		paths = sourcePaths("spec.template.spec", spec)
	default:
		paths = sourcePaths("spec", spec)
	}
	b := &binding{c: c, ctl: ctl}
	for _, fp := range paths {
		if strings.TrimSpace(fp[1]) == "" {
			continue
		}
		p := b.clean(fp[1])
		app, env, _, ok := c.reg.Locate(p)
		if !ok {
			continue
		}
		out = append(out, Finding{Rule: RuleController, Environment: env, File: ctl.file, Object: ctl.name, Field: fp[0],
			Reason: fmt.Sprintf("%s: %s: deploys environment %s's overlay of app %s (%s), but no environment's controllers patterns in %s "+
				"claim this file: every controller of a registered overlay is bound to its environment", ctl.file, ctl.name, env, app,
				p, c.reg.File())})
	}
	return out
}

// sourcePaths are the source paths of an Argo CD Application spec (prefix
// is the spec's field).
func sourcePaths(prefix string, spec map[string]any) [][2]string {
	var out [][2]string
	if list, ok := spec["sources"].([]any); ok {
		for i, s := range list {
			m, _ := s.(map[string]any)
			out = append(out, [2]string{fmt.Sprintf("%s.sources[%d].path", prefix, i), str(m, "path")})
		}
	}
	if m, ok := spec["source"].(map[string]any); ok {
		out = append(out, [2]string{prefix + ".source.path", str(m, "path")})
	}
	return out
}

// deployment is what one controller deploys: an overlay path to a
// cluster.
type deployment struct{ env, cluster, path string }

// duplicateControllers refuses every second controller, of any kind, that
// deploys one overlay to one cluster: two of them (two Applications, or an
// Application and a Kustomization) apply the same objects and fight over
// them, and a second one's parameters escape the first's review.
func duplicateControllers(deploys map[deployment][]controller) []Finding {
	var out []Finding
	for k, cs := range deploys {
		for _, ctl := range cs[1:] {
			out = append(out, Finding{Rule: RuleController, Environment: k.env, File: ctl.file, Object: ctl.name, Field: "spec",
				Reason: fmt.Sprintf("%s: %s: deploys %s to cluster %s, as %s (%s) does: one controller per overlay and cluster",
					ctl.file, ctl.name, k.path, k.cluster, cs[0].name, cs[0].file)})
		}
	}
	return out
}

// binding collects the findings on one controller object.
type binding struct {
	c     *repoCheck
	ctl   controller
	owner *environment.Environment
	out   []Finding
	// bound are the overlay paths the controller deploys (bound to the
	// owner).
	bound []string
}

func (b *binding) refuse(field, format string, args ...any) {
	env := ""
	if b.owner != nil {
		env = b.owner.Name
	}
	b.out = append(b.out, Finding{Rule: RuleController, Environment: env, File: b.ctl.file, Object: b.ctl.name, Field: field,
		Reason: fmt.Sprintf("%s: %s: ", b.ctl.file, b.ctl.name) + fmt.Sprintf(format, args...)})
}

// refuseChange refuses the value got of field, where the binding in the
// registry wants want.
func (b *binding) refuseChange(field, want, got, format string, args ...any) {
	b.refuse(field, format+" (binding in %s)", append(args, b.c.reg.File())...)
	f := &b.out[len(b.out)-1]
	f.Old, f.New = want, got
}

// bind checks that ctl is bound to overlay paths and a destination of the
// one environment that owns its file, and that the sources of a
// multi-source Application render no object twice.
func (c *repoCheck) bind(ctl controller, owners []*environment.Environment, rv *revision) *binding {
	b := &binding{c: c, ctl: ctl}
	switch len(owners) {
	case 0:
		if ctl.kind == "AppProject" {
			b.out = c.strayProject(ctl) // a project of no environment: Argo CD's to judge
			return b
		}
		b.refuse("", "no environment's controllers patterns in %s claim this file: a controller belongs to exactly one environment",
			c.reg.File())
		return b
	case 1:
		b.owner = owners[0]
	default:
		b.refuse("", "claimed by the controllers patterns of environments %s and %s: a controller belongs to exactly one environment",
			owners[0].Name, owners[1].Name)
		return b
	}
	spec, _ := ctl.obj["spec"].(map[string]any)
	switch ctl.kind {
	case "ApplicationSet":
		var repos []string
		if b.owner.Binding != nil {
			repos = b.owner.Binding.RepoURLs
		}
		apps, why := c.expandAppSet(ctl, rv, repos)
		if why != "" {
			b.refuse("spec.generators", "the Applications this ApplicationSet generates cannot be bound to environment %s before they exist (%s): "+
				"use list or Git directory generators and a plain template, or commit the Applications", b.owner.Name, why)
		}
		for _, app := range apps {
			g := c.bind(app, owners, rv)
			b.out, b.bound = append(b.out, g.out...), append(b.bound, g.bound...)
		}
	case "AppProject":
		b.project(spec)
	case "Kustomization":
		if b.path("spec.path", str(spec, "path")) {
			b.bound = append(b.bound, b.clean(str(spec, "path")))
		}
		if ns := str(spec, "targetNamespace"); ns != "" {
			b.namespace("spec.targetNamespace", ns)
		}
		b.flux(spec)
	default:
		b.application(spec, rv)
	}
	return b
}

// argoSource is one source of an Argo CD Application: its field and value.
type argoSource struct {
	field string
	m     map[string]any
}

// application checks an Argo CD Application's sources and destination.
func (b *binding) application(spec map[string]any, rv *revision) {
	var sources []argoSource
	if list, ok := spec["sources"].([]any); ok {
		for i, s := range list {
			m, _ := s.(map[string]any)
			sources = append(sources, argoSource{fmt.Sprintf("spec.sources[%d]", i), m})
		}
	} else if m, ok := spec["source"].(map[string]any); ok {
		sources = append(sources, argoSource{"spec.source", m})
	}
	if len(sources) == 0 {
		b.refuse("spec.source", "no source: a controller is bound to an overlay path of environment %s", b.owner.Name)
	}
	var paths []string
	var fields []string
	for _, s := range sources {
		if str(s.m, "repoURL") == "" {
			b.refuse(s.field+".repoURL", "no repoURL: a controller is bound to a fixed repository")
		}
		if p := str(s.m, "path"); p != "" || str(s.m, "ref") == "" {
			if b.path(s.field+".path", p) {
				paths, fields = append(paths, b.clean(p)), append(fields, s.field)
			}
		}
		b.parameter(s.field, s.m)
	}
	dest, _ := spec["destination"].(map[string]any)
	b.namespace("spec.destination.namespace", str(dest, "namespace"))
	if name := str(dest, "name"); name != "" && name != b.owner.ClusterName() {
		b.refuse("spec.destination.name", "destination cluster %q is not environment %s's (%s)", name, b.owner.Name, b.owner.ClusterName())
	}
	b.bound = append(b.bound, paths...)
	b.argo(spec, sources)
	if len(sources) > 1 {
		b.overlap(paths, fields, rv)
	}
}

// clean is a controller's source path relative to the GitOps root (a
// path relative to the Git repository's top loses the root's prefix).
func (b *binding) clean(p string) string {
	p = path.Clean(strings.TrimPrefix(strings.TrimSpace(p), "./"))
	if rel, ok := b.c.r.Rel(p); ok && b.c.r.Prefix != "" {
		return path.Clean(rel)
	}
	return p
}

// path checks that p is an overlay path of the owner; ok is true when it
// is.
func (b *binding) path(field, p string) bool {
	if strings.TrimSpace(p) == "" {
		b.refuse(field, "no path: a controller is bound to an overlay path of environment %s", b.owner.Name)
		return false
	}
	cp := b.clean(p)
	app, env, regField, ok := b.c.reg.Locate(cp)
	switch {
	case !ok:
		b.refuse(field, "%s is no registered overlay: environment %s's overlays are its paths and apps in %s", cp, b.owner.Name, b.c.reg.File())
		return false
	case env != b.owner.Name:
		b.refuse(field, "%s is environment %s's overlay of app %s (%s), not %s's: the file is environment %s's controller",
			cp, env, app, regField, b.owner.Name, b.owner.Name)
		return false
	}
	return true
}

// namespace checks a destination namespace against the owner's.
func (b *binding) namespace(field, ns string) {
	switch {
	case ns == "":
		b.refuse(field, "no destination namespace: a controller is bound to one of environment %s's namespaces", b.owner.Name)
	case !b.owner.HasNamespace(ns):
		b.refuse(field, "destination namespace %q is not one of environment %s's destination namespaces (%s)", ns, b.owner.Name,
			strings.Join(b.owner.Namespaces, ", "))
	}
}

// parameter checks the throughline plugin's environment parameter of a
// source, when it has one.
func (b *binding) parameter(field string, src map[string]any) {
	plugin, _ := src["plugin"].(map[string]any)
	params, _ := plugin["parameters"].([]any)
	for i, p := range params {
		m, _ := p.(map[string]any)
		if str(m, "name") == "environment" {
			if v := str(m, "string"); v != b.owner.Name {
				b.refuse(fmt.Sprintf("%s.plugin.parameters[%d]", field, i), "plugin parameter environment=%q, but the file is environment %s's controller",
					v, b.owner.Name)
			}
		}
	}
}

// overlap refuses every object two sources of a multi-source Application
// render (paths[i] is the source at fields[i]).
func (b *binding) overlap(paths, fields []string, rv *revision) {
	for i := range paths {
		for j := i + 1; j < len(paths); j++ {
			ids := map[string]bool{}
			for _, o := range rv.byPath[paths[i]].objects() {
				ids[o.ID().String()] = true
			}
			for _, o := range rv.byPath[paths[j]].objects() {
				if id := o.ID().String(); ids[id] {
					b.out = append(b.out, Finding{Rule: RuleMultiSource, Environment: b.owner.Name, File: b.ctl.file, Object: id, Field: "spec.sources",
						Reason: fmt.Sprintf("%s: %s: %s (%s) and %s (%s) both render %s: one object has one source",
							b.ctl.file, b.ctl.name, strings.TrimPrefix(fields[i], "spec."), paths[i], strings.TrimPrefix(fields[j], "spec."), paths[j], id)})
				}
			}
		}
	}
}

// str is m[key] as a string ("" when absent or not a string).
func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}
