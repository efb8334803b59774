package breakglass

import (
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

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
	// LiveOnly: an object the controller tracks for the application that
	// exists live but is not in the desired state before the pause (created
	// by hand during the incident); listed, never written back.
	LiveOnly Class = "live-only"
	// DeletedLive: an object of the desired state before the pause that no
	// longer exists live (deleted during the incident); listed.
	DeletedLive Class = "deleted-live"
)

// Change is one field that differs between the desired state before the
// pause and the live state now, or (classes live-only and deleted-live,
// empty Path) one whole object.
type Change struct {
	Object   string `json:"object"`
	Path     string `json:"path"`
	Before   any    `json:"before"`
	Live     any    `json:"live"`
	Proposed any    `json:"proposed,omitempty"`
	Manager  string `json:"manager"`
	Class    Class  `json:"class"`

	id render.ID
	// path is the field; patchPath and patchValue what a write-back sets:
	// the field itself, or the whole list when an element of it is
	// addressed by value (v:) or index (i:).
	path, patchPath fieldpath.Path
	patchValue      any
	// setMember: patchPath is a set (v: elements) and patchValue its
	// value before the pause; the write-back adds Live to it.
	setMember bool
	// readBack: the change was read from JSON, its Secret values digests
	// already (shown).
	readBack bool
}

func (c Change) String() string {
	switch c.Class {
	case LiveOnly:
		return fmt.Sprintf("%-15s %s: live, tracked by the controller, not in the desired state before the pause (created by %s)",
			c.Class, c.Object, c.Manager)
	case DeletedLive:
		return fmt.Sprintf("%-15s %s: in the desired state before the pause, not live", c.Class, c.Object)
	}
	return fmt.Sprintf("%-15s %s %s: %s -> %s (by %s)", c.Class, c.Object, c.Path, short(c.shown(c.Before)), short(c.shown(c.Live)), c.Manager)
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
	DefaultTemporary = []string{"*:metadata.annotations.kubectl.kubernetes.io/restartedAt",
		"*:spec.template.metadata.annotations.kubectl.kubernetes.io/restartedAt", "*:spec.paused"}
)

// runtimeAnnotations are written by controllers at run time, never desired.
var runtimeAnnotations = []string{"kubectl.kubernetes.io/last-applied-configuration", "deployment.kubernetes.io/revision",
	"argocd.argoproj.io/tracking-id", "kustomize.toolkit.fluxcd.io/", AnnotationTicket, AnnotationExpiresAt}

// Compare is the three-way comparison of a write-back.
type Compare struct {
	// Before is the desired state at the pause (rendered at the recorded
	// source revision); Proposed the desired state now.
	Before, Proposed []render.Object
	// Live is the live object of each rendered or tracked one (absent: not
	// found), by ID without version.
	Live map[render.ID]map[string]any
	// Tracked are the objects the controller tracks for the application
	// (Argo CD status.resources, Flux status.inventory, and those recorded
	// at the pause); one live but not in Before is a live-only change.
	Tracked []render.ID
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
// runtime annotations and managedFields are not changes. The fields are
// read from each manager's managedFields entry as a structured-merge-diff
// field set, so every path element kind counts: field names (f:), list
// elements by key (k:), set values (v:) and indexes (i:).
func (c Compare) Run() ([]Change, error) {
	proposed := map[render.ID]render.Object{}
	for _, o := range c.Proposed {
		proposed[Key(o.ID())] = o
	}
	var out []Change
	inBefore := map[render.ID]bool{}
	for _, o := range c.Before {
		id := Key(o.ID())
		inBefore[id] = true
		live, ok := c.Live[id]
		if !ok {
			out = append(out, Change{Object: o.ID().String(), Class: DeletedLive, id: id})
			continue
		}
		changes, err := c.object(o, id, live, proposed[id])
		if err != nil {
			return nil, err
		}
		out = append(out, changes...)
	}
	done := map[render.ID]bool{}
	for _, t := range c.Tracked {
		id := Key(t)
		live, ok := c.Live[id]
		if inBefore[id] || done[id] || !ok {
			continue
		}
		done[id] = true
		mfs, err := managedFieldsOf(live)
		if err != nil {
			return nil, fmt.Errorf("%s metadata.managedFields: %w", t, err)
		}
		out = append(out, Change{Object: t.String(), Class: LiveOnly, Manager: creator(mfs), Live: liveSummary(live), id: id})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Object != out[j].Object {
			return out[i].Object < out[j].Object
		}
		return out[i].Path < out[j].Path
	})
	return out, nil
}

// object compares one object that is both desired before the pause and live.
func (c Compare) object(o render.Object, id render.ID, live map[string]any, prop render.Object) ([]Change, error) {
	name := id.Kind + " " + id.Namespace + "/" + id.Name
	atPause := map[string]bool{}
	for _, mf := range c.AtPause[name] {
		atPause[mf.Manager] = true
	}
	mfs, err := managedFieldsOf(live)
	if err != nil {
		return nil, fmt.Errorf("%s metadata.managedFields: %w", name, err)
	}
	var out []Change
	seen := map[string]bool{}
	for _, mf := range mfs {
		if contains(c.ControllerManagers, mf.Manager) || mf.Subresource == "status" || mf.FieldsV1 == nil {
			continue
		}
		other := mf.Subresource == "scale" || contains(c.OtherWriters, mf.Manager) ||
			(atPause[mf.Manager] && !strings.HasPrefix(mf.Manager, "kubectl"))
		set, err := FieldSet(mf)
		if err != nil {
			return nil, fmt.Errorf("%s managedFields of %s: %w", name, mf.Manager, err)
		}
		var leaves []fieldpath.Path
		set.Leaves().Iterate(func(p fieldpath.Path) { leaves = append(leaves, p.Copy()) })
		for _, p := range leaves {
			ps := PathString(p)
			if seen[ps] || dropped(p) {
				continue
			}
			lv, lok := Lookup(live, p)
			bv, bok := Lookup(o.Map, p)
			if !lok || (bok && equal(lv, bv)) {
				continue
			}
			seen[ps] = true
			ch := Change{Object: o.ID().String(), Path: ps, Live: lv, Manager: mf.Manager, id: id, path: p, patchPath: p, patchValue: lv}
			if i := wholeListAt(p); i > 0 {
				ch.patchPath = p[:i]
				if p[i].Value != nil && i == len(p)-1 {
					// A set member: the set as desired plus this value,
					// not the values other writers added.
					ch.setMember = true
					ch.patchValue, _ = Lookup(o.Map, p[:i])
				} else {
					ch.patchValue, _ = Lookup(live, p[:i])
				}
			}
			if bok {
				ch.Before = bv
			}
			pv, pok := Lookup(prop.Map, p)
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
	return out, nil
}

// FieldSet reads a managedFields entry's FieldsV1 as a field set.
func FieldSet(mf metav1.ManagedFieldsEntry) (*fieldpath.Set, error) {
	if mf.FieldsType != "" && mf.FieldsType != "FieldsV1" {
		return nil, fmt.Errorf("fieldsType %q: want FieldsV1", mf.FieldsType)
	}
	s := &fieldpath.Set{}
	if mf.FieldsV1 == nil {
		return s, nil
	}
	if err := s.FromJSON(mf.FieldsV1.GetRawReader()); err != nil {
		return nil, fmt.Errorf("fieldsV1: %w", err)
	}
	return s, nil
}

// wholeListAt is the index of the first element of p addressed by value or
// index (0 when none): a strategic merge patch cannot address such an
// element, so a write-back sets the whole list.
func wholeListAt(p fieldpath.Path) int {
	for i, pe := range p {
		if pe.Value != nil || pe.Index != nil {
			return i
		}
	}
	return 0
}

// creator is the field manager of an object's first non-status write.
func creator(mfs []metav1.ManagedFieldsEntry) string {
	for _, mf := range mfs {
		if mf.Subresource == "" {
			return mf.Manager
		}
	}
	return "unknown"
}

func liveSummary(live map[string]any) map[string]any {
	md, _ := live["metadata"].(map[string]any)
	return map[string]any{"resourceVersion": md["resourceVersion"], "creationTimestamp": md["creationTimestamp"]}
}

// Key is id without its version: how a write-back keys live objects.
func Key(id render.ID) render.ID { id.Version = ""; return id }

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

// PathString writes a field path as the write-back lists it: field names
// joined by dots, a list element by Key as its JSON Key fields
// (containers[{"name":"web"}]), by value as [=<JSON>], by index as [N].
func PathString(p fieldpath.Path) string {
	var b strings.Builder
	for i, pe := range p {
		switch {
		case pe.FieldName != nil:
			if i > 0 {
				b.WriteString(".")
			}
			b.WriteString(*pe.FieldName)
		case pe.Key != nil:
			kb, _ := json.Marshal(keyMap(pe))
			b.WriteString("[" + string(kb) + "]")
		case pe.Value != nil:
			vb, _ := json.Marshal((*pe.Value).Unstructured())
			b.WriteString("[=" + string(vb) + "]")
		case pe.Index != nil:
			b.WriteString("[" + strconv.Itoa(*pe.Index) + "]")
		}
	}
	return b.String()
}

func keyMap(pe fieldpath.PathElement) map[string]any {
	m := map[string]any{}
	for _, f := range *pe.Key {
		m[f.Name] = f.Value.Unstructured()
	}
	return m
}

// dropped: status, metadata other than labels, annotations and finalizers,
// runtime annotations.
func dropped(p fieldpath.Path) bool {
	if len(p) == 0 || p[0].FieldName == nil {
		return true
	}
	switch *p[0].FieldName {
	case "status", "apiVersion", "kind":
		return true
	case "metadata":
		if len(p) < 2 || p[1].FieldName == nil {
			return true
		}
		switch *p[1].FieldName {
		case "labels", "finalizers":
			return false
		case "annotations":
		default:
			return true
		}
	}
	// Any level's annotations (metadata, pod template metadata).
	for i := 0; i+1 < len(p); i++ {
		if p[i].FieldName == nil || *p[i].FieldName != "annotations" || p[i+1].FieldName == nil {
			continue
		}
		for _, a := range runtimeAnnotations {
			if strings.HasPrefix(*p[i+1].FieldName, a) {
				return true
			}
		}
	}
	return false
}

// Lookup finds the value at p in an unstructured object.
func Lookup(v any, p fieldpath.Path) (any, bool) {
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[*pe.FieldName]; !ok {
				return nil, false
			}
		case pe.Key != nil:
			list, _ := v.([]any)
			found := false
			for _, e := range list {
				if m, ok := e.(map[string]any); ok && matches(m, pe) {
					v, found = m, true
					break
				}
			}
			if !found {
				return nil, false
			}
		case pe.Value != nil:
			list, _ := v.([]any)
			want := (*pe.Value).Unstructured()
			found := false
			for _, e := range list {
				if equal(e, want) {
					v, found = e, true
					break
				}
			}
			if !found {
				return nil, false
			}
		case pe.Index != nil:
			list, ok := v.([]any)
			if !ok || *pe.Index < 0 || *pe.Index >= len(list) {
				return nil, false
			}
			v = list[*pe.Index]
		default:
			return nil, false
		}
	}
	return v, true
}

func matches(m map[string]any, pe fieldpath.PathElement) bool {
	for _, f := range *pe.Key {
		if !equal(m[f.Name], f.Value.Unstructured()) {
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
// merge patch that sets the live values: list elements addressed by Key
// carry their Key fields; a set (elements by value, such as
// metadata.finalizers) is set whole to its desired members plus the
// permanent ones, and a list addressed by index is set whole to its live
// value.
func Patches(changes []Change) []render.Object {
	byObj := map[render.ID]map[string]any{}
	var order []render.ID
	for _, c := range changes {
		if c.Class != Permanent || len(c.patchPath) == 0 {
			continue
		}
		p, ok := byObj[c.id]
		if !ok {
			md := map[string]any{"name": c.id.Name}
			p = map[string]any{"kind": c.id.Kind, "metadata": md}
			byObj[c.id] = p
			order = append(order, c.id)
		}
		v := c.patchValue
		if c.setMember {
			cur, ok := Lookup(p, c.patchPath)
			if !ok {
				cur = v
			}
			list, _ := cur.([]any)
			list = append([]any(nil), list...)
			if !slices.ContainsFunc(list, func(e any) bool { return equal(e, c.Live) }) {
				list = append(list, c.Live)
			}
			v = list
		}
		set(p, c.patchPath, v)
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

// set writes v at p (field names and keyed list elements only) into m.
func set(m map[string]any, p fieldpath.Path, v any) {
	if len(p) == 0 || p[0].FieldName == nil {
		return
	}
	name := *p[0].FieldName
	if len(p) == 1 {
		m[name] = v
		return
	}
	if next := p[1]; next.Key != nil {
		list, _ := m[name].([]any)
		var elem map[string]any
		for _, e := range list {
			if em, ok := e.(map[string]any); ok && matches(em, next) {
				elem = em
			}
		}
		if elem == nil {
			elem = keyMap(next)
			list = append(list, elem)
			m[name] = list
		}
		if len(p) == 2 { // the element itself
			if vm, ok := v.(map[string]any); ok {
				for k, x := range vm {
					elem[k] = x
				}
			}
			return
		}
		set(elem, p[2:], v)
		return
	}
	child, ok := m[name].(map[string]any)
	if !ok {
		child = map[string]any{}
		m[name] = child
	}
	set(child, p[1:], v)
}
