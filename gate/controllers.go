package gate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/render"
)

// ClustersDir is the directory whose every controller object is checked,
// whether or not an environment's controllers patterns claim its file.
const ClustersDir = "clusters"

// The controller objects: an Argo CD Application or ApplicationSet, a
// Flux Kustomization.
const (
	argoGroup = "argoproj.io"
	fluxGroup = "kustomize.toolkit.fluxcd.io"
)

// controller is one controller object of a file.
type controller struct {
	file string
	// kind is Application, ApplicationSet or Kustomization (Flux's).
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
		case id.Group == argoGroup && (id.Kind == "Application" || id.Kind == "ApplicationSet"),
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

// controllers checks every controller object of rv (read from Git at t's
// revision, never through a link of the exported tree).
func (c *repoCheck) controllers(ctx context.Context, t *gitops.Tree, rv *revision) ([]Finding, error) {
	var out []Finding
	for _, f := range rv.files {
		owners := c.owners(f)
		if !controllerFile(f, owners) {
			continue
		}
		data, err := c.r.ReadFile(ctx, t.Rev, f)
		if err != nil {
			return nil, fmt.Errorf("reading controller file %s at %s: %w", f, t.Rev, err)
		}
		cs, err := parseControllers(f, data)
		if err != nil {
			return nil, exitcode.InvalidFile(f, err)
		}
		for _, ctl := range cs {
			out = append(out, c.bind(ctl, owners, rv)...)
		}
	}
	return out, nil
}

// binding collects the findings on one controller object.
type binding struct {
	c     *repoCheck
	ctl   controller
	owner *environment.Environment
	out   []Finding
}

func (b *binding) refuse(field, format string, args ...any) {
	env := ""
	if b.owner != nil {
		env = b.owner.Name
	}
	b.out = append(b.out, Finding{Rule: RuleController, Environment: env, File: b.ctl.file, Object: b.ctl.name, Field: field,
		Reason: fmt.Sprintf("%s: %s: ", b.ctl.file, b.ctl.name) + fmt.Sprintf(format, args...)})
}

// bind checks that ctl is bound to overlay paths and a destination of the
// one environment that owns its file, and that the sources of a
// multi-source Application render no object twice.
func (c *repoCheck) bind(ctl controller, owners []*environment.Environment, rv *revision) []Finding {
	b := &binding{c: c, ctl: ctl}
	switch len(owners) {
	case 0:
		b.refuse("", "no environment's controllers patterns in %s claim this file: a controller belongs to exactly one environment",
			c.reg.File())
		return b.out
	case 1:
		b.owner = owners[0]
	default:
		b.refuse("", "claimed by the controllers patterns of environments %s and %s: a controller belongs to exactly one environment",
			owners[0].Name, owners[1].Name)
		return b.out
	}
	spec, _ := ctl.obj["spec"].(map[string]any)
	switch ctl.kind {
	case "ApplicationSet":
		b.refuse("spec.template", "an ApplicationSet generates Applications whose paths and destinations cannot be bound to "+
			"environment %s before they exist: commit the Applications", b.owner.Name)
	case "Kustomization":
		b.path("spec.path", str(spec, "path"))
		if ns := str(spec, "targetNamespace"); ns != "" {
			b.namespace("spec.targetNamespace", ns)
		}
	default:
		b.application(spec, rv)
	}
	return b.out
}

// application checks an Argo CD Application's sources and destination.
func (b *binding) application(spec map[string]any, rv *revision) {
	type source struct {
		field string
		m     map[string]any
	}
	var sources []source
	if list, ok := spec["sources"].([]any); ok {
		for i, s := range list {
			m, _ := s.(map[string]any)
			sources = append(sources, source{fmt.Sprintf("spec.sources[%d]", i), m})
		}
	} else if m, ok := spec["source"].(map[string]any); ok {
		sources = append(sources, source{"spec.source", m})
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
