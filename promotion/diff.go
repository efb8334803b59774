package promotion

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/throughline-dev/throughline/render"
)

// Class is the kind of a difference in a target's rendered objects.
type Class string

// The classes, from the least to the most sensitive.
const (
	ClassArtifact   Class = "artifact"   // a container image (the identity being promoted)
	ClassCapacity   Class = "capacity"   // replicas, resources, HorizontalPodAutoscaler
	ClassRouting    Class = "routing"    // Ingress, Gateway, HTTPRoute hosts
	ClassPermission Class = "permission" // ServiceAccount, Role/ClusterRole and bindings
	ClassBoundary   Class = "boundary"   // namespace, PVC, ResourceQuota, LimitRange, Secret refs
	ClassOther      Class = "other"      // any other parameter (env vars, labels, ...)
)

// Change is one classified difference.
type Change struct {
	Class  Class     `json:"class"`
	Object render.ID `json:"object"`
	// Field is the path in the object ("" for an added or removed object).
	Field  string `json:"field,omitempty"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// Op is "changed", "added" or "removed".
	Op string `json:"op"`
	// Redacted is set when Before and After are short hashes of a Secret's
	// values (or of values that show one), never the values.
	Redacted bool `json:"redacted,omitempty"`
}

func (c Change) String() string {
	switch c.Op {
	case "added", "removed":
		return fmt.Sprintf("%s: %s %s", c.Class, c.Object, c.Op)
	}
	if c.Redacted {
		return fmt.Sprintf("%s: %s %s: changed (%s -> %s)", c.Class, c.Object, c.Field, c.Before, c.After)
	}
	return fmt.Sprintf("%s: %s %s: %s -> %s", c.Class, c.Object, c.Field, c.Before, c.After)
}

// Classify compares the rendered objects of a target before and after a
// change and classifies every difference. Objects are matched by identity;
// an object whose namespace changed is a boundary change (removed in one
// namespace, added in another). A Secret's values are never in a Change:
// a changed value is shown as changed, with a short hash of old and new.
func Classify(before, after []render.Object) []Change {
	needles := collectSecrets(before, after)
	key := func(id render.ID) string { return id.Group + "|" + id.Kind + "|" + id.Namespace + "|" + id.Name }
	bm := map[string]render.Object{}
	for _, o := range before {
		bm[key(o.ID())] = o
	}
	am := map[string]render.Object{}
	for _, o := range after {
		am[key(o.ID())] = o
	}
	// Pair objects that only moved namespace.
	moved := map[string]string{} // before key -> after key
	nsless := func(id render.ID) string { return id.Group + "|" + id.Kind + "|" + id.Name }
	for bk, bo := range bm {
		if _, ok := am[bk]; ok {
			continue
		}
		for ak, ao := range am {
			if _, ok := bm[ak]; ok {
				continue
			}
			if nsless(bo.ID()) == nsless(ao.ID()) && bo.ID().Namespace != ao.ID().Namespace {
				moved[bk] = ak
				break
			}
		}
	}
	movedTo := map[string]bool{}
	for _, ak := range moved {
		movedTo[ak] = true
	}
	var out []Change
	for bk, bo := range bm {
		ao, ok := am[bk]
		if ak, m := moved[bk]; m {
			ao, ok = am[ak], true // metadata.namespace differs: a boundary change
		}
		if !ok {
			out = append(out, Change{Class: objectClass(bo.ID()), Object: bo.ID(), Op: "removed"})
			continue
		}
		diffValues(needles, bo.ID(), kindOf(bo), "", bo.Map, ao.Map, &out)
	}
	for ak, ao := range am {
		if _, ok := bm[ak]; ok || movedTo[ak] {
			continue
		}
		out = append(out, Change{Class: objectClass(ao.ID()), Object: ao.ID(), Op: "added"})
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Object.String() != b.Object.String() {
			return a.Object.String() < b.Object.String()
		}
		return a.Field < b.Field
	})
	return out
}

func kindOf(o render.Object) string { return o.ID().Kind }

// objectClass is the class of adding or removing a whole object.
func objectClass(id render.ID) Class {
	switch id.Kind {
	case "HorizontalPodAutoscaler":
		return ClassCapacity
	case "Ingress", "Gateway", "HTTPRoute", "GRPCRoute", "TLSRoute":
		return ClassRouting
	case "ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding":
		return ClassPermission
	case "Namespace", "PersistentVolumeClaim", "ResourceQuota", "LimitRange", "Secret", "ExternalSecret", "NetworkPolicy":
		return ClassBoundary
	}
	return ClassOther
}

func diffValues(needles secretNeedles, id render.ID, kind, path string, a, b any, out *[]Change) {
	if reflect.DeepEqual(a, b) {
		return
	}
	am, aok := a.(map[string]any)
	bmap, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bmap {
			keys[k] = true
		}
		for k := range keys {
			diffValues(needles, id, kind, join(path, k), am[k], bmap[k], out)
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		for i := range al {
			diffValues(needles, id, kind, path+"["+strconv.Itoa(i)+"]", al[i], bl[i], out)
		}
		return
	}
	c := Change{Class: fieldClass(kind, path), Object: id, Field: path, Before: short(a), After: short(b), Op: "changed"}
	needles.redactChange(&c, a, b)
	*out = append(*out, c)
}

func join(p, k string) string {
	if p == "" {
		return k
	}
	return p + "." + k
}

func short(v any) string {
	if v == nil {
		return "<none>"
	}
	s := fmt.Sprint(v)
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// fieldClass classifies one changed field of an object of kind.
func fieldClass(kind, path string) Class {
	last := path
	if i := strings.LastIndex(path, "."); i >= 0 {
		last = path[i+1:]
	}
	segs := strings.Split(path, ".")
	has := func(s string) bool {
		for _, x := range segs {
			if x == s || strings.HasPrefix(x, s+"[") {
				return true
			}
		}
		return false
	}
	switch {
	case path == "metadata.namespace" || has("namespace") && kind != "ConfigMap":
		return ClassBoundary
	case has("secretKeyRef") || has("secretRef") || has("secret") || has("imagePullSecrets") ||
		has("persistentVolumeClaim") || has("volumeClaimTemplates") || kind == "ExternalSecret" ||
		kind == "Secret" || kind == "PersistentVolumeClaim" || kind == "ResourceQuota" || kind == "LimitRange" || kind == "NetworkPolicy":
		return ClassBoundary
	case kind == "ServiceAccount" || kind == "Role" || kind == "ClusterRole" || kind == "RoleBinding" || kind == "ClusterRoleBinding" ||
		last == "serviceAccountName" || last == "serviceAccount" || last == "automountServiceAccountToken":
		return ClassPermission
	case (has("containers") || has("initContainers") || has("ephemeralContainers")) && last == "image":
		return ClassArtifact
	case kind == "HorizontalPodAutoscaler" || path == "spec.replicas" || has("resources"):
		return ClassCapacity
	case kind == "Ingress" || kind == "Gateway" || kind == "HTTPRoute" || kind == "GRPCRoute" || kind == "TLSRoute":
		return ClassRouting
	}
	return ClassOther
}

// Classes counts the changes per class.
func Classes(cs []Change) map[Class]int {
	m := map[Class]int{}
	for _, c := range cs {
		m[c.Class]++
	}
	return m
}
