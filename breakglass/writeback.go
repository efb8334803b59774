package breakglass

import (
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/throughline-dev/throughline/render"
)

// Class is what a live change is.
type Class string

// The classes of a live change.
const (
	// Permanent configuration: written back into the overlay.
	Permanent Class = "permanent"
	// Temporary: for the incident only; listed, not written back.
	Temporary Class = "temporary"
	// OtherWriter: owned by another legitimate writer (HPA, an operator, a
	// webhook); listed, not written back.
	OtherWriter Class = "other-writer"
	// AlreadyDesired: the proposed desired state already has the live value.
	AlreadyDesired Class = "already-desired"
	// Conflict: the desired state moved on at that field since the pause,
	// to a value other than the live one; listed for a human.
	Conflict Class = "conflict"
)

// Change is one field that differs between the desired state before the
// pause and the live state now.
type Change struct {
	Object   string `json:"object"`
	Path     string `json:"path"`
	Before   any    `json:"before"`
	Live     any    `json:"live"`
	Proposed any    `json:"proposed,omitempty"`
	Manager  string `json:"manager"`
	Class    Class  `json:"class"`

	id    render.ID
	steps []step
}

func (c Change) String() string {
	return fmt.Sprintf("%-15s %s %s: %s -> %s (by %s)", c.Class, c.Object, c.Path, short(c.Before), short(c.Live), c.Manager)
}

func short(v any) string {
	if v == nil {
		return "<unset>"
	}
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// Defaults of a write-back comparison.
var (
	// DefaultControllerManagers are the field managers of the GitOps
	// controllers themselves: what they own is the desired state.
	DefaultControllerManagers = []string{"argocd-controller", "argocd-application-controller", "kustomize-controller", "helm-controller"}
	// DefaultOtherWriters are legitimate writers besides the controller.
	DefaultOtherWriters = []string{"kube-controller-manager", "horizontal-pod-autoscaler", "vpa-updater", "cluster-autoscaler", "keda-operator"}
	// DefaultTemporary are fields that are incident-only by nature.
	DefaultTemporary = []string{"*:metadata.annotations.kubectl.kubernetes.io/restartedAt", "*:spec.template.metadata.annotations.kubectl.kubernetes.io/restartedAt", "*:spec.paused"}
)

// runtimeAnnotations are written by controllers at run time, never desired.
var runtimeAnnotations = []string{"kubectl.kubernetes.io/last-applied-configuration", "deployment.kubernetes.io/revision",
	"argocd.argoproj.io/tracking-id", "kustomize.toolkit.fluxcd.io/", AnnotationTicket, AnnotationExpiresAt}

// Compare is the three-way comparison of a write-back.
type Compare struct {
	// Before is the desired state at the pause (rendered at the recorded
	// source revision); Proposed the desired state now.
	Before, Proposed []render.Object
	// Live is the live object of each rendered one (absent: not found).
	Live map[render.ID]map[string]any
	// AtPause are the managedFields recorded at the pause, by object
	// "Kind namespace/name".
	AtPause map[string][]metav1.ManagedFieldsEntry
	// ControllerManagers, OtherWriters: field manager names; Temporary:
	// patterns "Kind/name:path" (path.Match on each part, * for any).
	ControllerManagers, OtherWriters, Temporary []string
}

// Run lists every change of the live state against the desired state
// before the pause, classified, sorted by object and path. Status,
// defaulted fields (owned by no manager), fields owned by the controller,
// runtime annotations and managedFields are not changes.
func (c Compare) Run() ([]Change, error) {
	proposed := map[render.ID]render.Object{}
	for _, o := range c.Proposed {
		proposed[key(o.ID())] = o
	}
	var out []Change
	for _, o := range c.Before {
		id := key(o.ID())
		live, ok := c.Live[id]
		if !ok {
			continue
		}
		name := id.Kind + " " + id.Namespace + "/" + id.Name
		atPause := map[string]bool{}
		for _, mf := range c.AtPause[name] {
			atPause[mf.Manager] = true
		}
		mfs, err := managedFieldsOf(live)
		if err != nil {
			return nil, fmt.Errorf("%s metadata.managedFields: %w", name, err)
		}
		seen := map[string]bool{}
		for _, mf := range mfs {
			if contains(c.ControllerManagers, mf.Manager) || mf.Subresource == "status" || mf.FieldsV1 == nil {
				continue
			}
			other := mf.Subresource == "scale" || contains(c.OtherWriters, mf.Manager) ||
				(atPause[mf.Manager] && !strings.HasPrefix(mf.Manager, "kubectl"))
			var fields map[string]any
			if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
				return nil, fmt.Errorf("%s managedFields of %s: %w", name, mf.Manager, err)
			}
			for _, p := range leaves(fields, nil) {
				ps := pathString(p)
				if seen[ps] || dropped(p, ps) {
					continue
				}
				lv, lok := lookup(live, p)
				bv, bok := lookup(o.Map, p)
				if !lok || (bok && equal(lv, bv)) {
					continue
				}
				seen[ps] = true
				ch := Change{Object: o.ID().String(), Path: ps, Live: lv, Manager: mf.Manager, id: id, steps: p}
				if bok {
					ch.Before = bv
				}
				pv, pok := lookup(proposed[id].Map, p)
				if pok {
					ch.Proposed = pv
				}
				switch {
				case other:
					ch.Class = OtherWriter
				case pok && equal(pv, lv):
					ch.Class = AlreadyDesired
				case pok != bok || (pok && !equal(pv, bv)):
					ch.Class = Conflict
				case c.temporary(id, ps):
					ch.Class = Temporary
				default:
					ch.Class = Permanent
				}
				out = append(out, ch)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Object != out[j].Object {
			return out[i].Object < out[j].Object
		}
		return out[i].Path < out[j].Path
	})
	return out, nil
}

func key(id render.ID) render.ID { id.Version = ""; return id }

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

func (c Compare) temporary(id render.ID, p string) bool {
	for _, pat := range c.Temporary {
		obj, field, ok := strings.Cut(pat, ":")
		if !ok {
			obj, field = "*", pat
		}
		if m, _ := path.Match(obj, id.Kind+"/"+id.Name); !m && obj != "*" {
			continue
		}
		if field == p || field == "*" {
			return true
		}
		if m, _ := path.Match(field, p); m {
			return true
		}
	}
	return false
}

func managedFieldsOf(live map[string]any) ([]metav1.ManagedFieldsEntry, error) {
	md, _ := live["metadata"].(map[string]any)
	raw, ok := md["managedFields"]
	if !ok {
		return nil, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var mfs []metav1.ManagedFieldsEntry
	if err := json.Unmarshal(b, &mfs); err != nil {
		return nil, err
	}
	return mfs, nil
}

// step is one element of a managedFields path: a field name, or the key
// of a list element (k:{...}).
type step struct {
	field string
	key   map[string]any
}

// leaves lists the paths of the leaves of a FieldsV1 set.
func leaves(set map[string]any, prefix []step) [][]step {
	var out [][]step
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if k == "." {
			continue
		}
		var s step
		switch {
		case strings.HasPrefix(k, "f:"):
			s.field = k[2:]
		case strings.HasPrefix(k, "k:"):
			if err := json.Unmarshal([]byte(k[2:]), &s.key); err != nil {
				continue
			}
		default: // v: (set values) and i: (indexes) are not written back
			continue
		}
		p := append(append([]step(nil), prefix...), s)
		child, _ := set[k].(map[string]any)
		hasChildren := false
		for ck := range child {
			if ck != "." {
				hasChildren = true
			}
		}
		if !hasChildren {
			if s.key == nil {
				out = append(out, p)
			}
			continue
		}
		out = append(out, leaves(child, p)...)
	}
	return out
}

func pathString(p []step) string {
	var b strings.Builder
	for i, s := range p {
		if s.key != nil {
			kb, _ := json.Marshal(s.key)
			b.WriteString("[" + string(kb) + "]")
			continue
		}
		if i > 0 {
			b.WriteString(".")
		}
		b.WriteString(s.field)
	}
	return b.String()
}

func dropped(p []step, ps string) bool {
	if len(p) == 0 || p[0].field == "status" {
		return true
	}
	if p[0].field == "metadata" {
		if len(p) < 2 || (p[1].field != "annotations" && p[1].field != "labels") {
			return true
		}
	}
	for _, a := range runtimeAnnotations {
		if strings.Contains(ps, "annotations."+a) {
			return true
		}
	}
	return false
}

func lookup(v any, p []step) (any, bool) {
	for _, s := range p {
		if s.key != nil {
			list, ok := v.([]any)
			if !ok {
				return nil, false
			}
			found := false
			for _, e := range list {
				if m, ok := e.(map[string]any); ok && matches(m, s.key) {
					v, found = m, true
					break
				}
			}
			if !found {
				return nil, false
			}
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[s.field]; !ok {
			return nil, false
		}
	}
	return v, true
}

func matches(m, key map[string]any) bool {
	for k, v := range key {
		if !equal(m[k], v) {
			return false
		}
	}
	return true
}

// equal compares JSON values, numbers by value (rendered YAML gives int64,
// the API float64).
func equal(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return reflect.DeepEqual(a, b)
	}
	var na, nb any
	_ = json.Unmarshal(ja, &na)
	_ = json.Unmarshal(jb, &nb)
	return reflect.DeepEqual(na, nb)
}

// Patches builds, for every object with permanent changes, a strategic
// merge patch (list elements by their keys) that sets the live values.
func Patches(changes []Change) []render.Object {
	byObj := map[render.ID]map[string]any{}
	var order []render.ID
	for _, c := range changes {
		if c.Class != Permanent {
			continue
		}
		p, ok := byObj[c.id]
		if !ok {
			md := map[string]any{"name": c.id.Name}
			p = map[string]any{"kind": c.id.Kind, "metadata": md}
			byObj[c.id] = p
			order = append(order, c.id)
		}
		set(p, c.steps, c.Live)
	}
	var out []render.Object
	for _, id := range order {
		out = append(out, render.Object{Map: byObj[id]})
	}
	return out
}

// SetAPIVersion fills apiVersion of each patch from the rendered objects.
func SetAPIVersion(patches, rendered []render.Object) {
	av := map[string]string{}
	for _, o := range rendered {
		a, _ := o.Map["apiVersion"].(string)
		av[o.ID().Kind+"/"+o.ID().Name] = a
	}
	for _, p := range patches {
		p.Map["apiVersion"] = av[p.ID().Kind+"/"+p.ID().Name]
	}
}

func set(m map[string]any, p []step, v any) {
	cur := m
	for i, s := range p {
		last := i == len(p)-1
		if s.key != nil {
			continue // handled by the field step before it
		}
		if last {
			cur[s.field] = v
			return
		}
		if i+1 < len(p) && p[i+1].key != nil {
			list, _ := cur[s.field].([]any)
			var elem map[string]any
			for _, e := range list {
				if em, ok := e.(map[string]any); ok && matches(em, p[i+1].key) {
					elem = em
				}
			}
			if elem == nil {
				elem = map[string]any{}
				for k, kv := range p[i+1].key {
					elem[k] = kv
				}
				list = append(list, elem)
				cur[s.field] = list
			}
			if i+1 == len(p)-1 {
				return
			}
			cur = elem
			continue
		}
		next, ok := cur[s.field].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[s.field] = next
		}
		cur = next
	}
}
