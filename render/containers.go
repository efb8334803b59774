package render

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// PodSpecContainerFields are the lists of a PodSpec that hold containers.
var PodSpecContainerFields = []string{"initContainers", "containers", "ephemeralContainers"}

// Container is one container found in an object, wherever its pod template
// sits (Deployment, CronJob, Argo Rollouts Rollout, any CRD embedding a
// PodSpec).
type Container struct {
	Object ID
	Source string
	// Path is the container's field path, e.g.
	// spec.jobTemplate.spec.template.spec.containers[0].
	Path string
	Name string
	// Image is the image reference; empty when the field is missing or not a
	// string (ImageField tells which).
	Image      string
	ImageField ImageField
}

// ImageField tells what the container's image field holds.
type ImageField int

const (
	// ImageString is a string image reference.
	ImageString ImageField = iota
	// ImageMissing is a container without an image field.
	ImageMissing
	// ImageNotString is an image field that is not a string.
	ImageNotString
)

// Containers walks the object for containers, initContainers and
// ephemeralContainers lists at any depth, so every kind that embeds a pod
// template is covered without a list of kinds.
func Containers(o Object) []Container {
	var out []Container
	var w ContainerWalker
	w.Each(o, o.ID(), func(c Container) { out = append(out, c) })
	return out
}

// ContainerWalker finds the containers of one object after another,
// reusing its buffers: what a check of thousands of objects uses. The zero
// value is ready; it is not safe for concurrent use.
type ContainerWalker struct{ w containerWalk }

// Each calls fn for every container of o (whose identity is id), in the
// order Containers returns them.
func (cw *ContainerWalker) Each(o Object, id ID, fn func(Container)) {
	cw.w.id, cw.w.source, cw.w.fn = id, o.Source, fn
	cw.w.walk(o.Map)
	cw.w.fn = nil
}

func isString(v any) bool { _, ok := v.(string); return ok }

// containerWalk visits every container list at any depth, in the order of
// the sorted field names. The field path is kept as a stack of segments
// and written out only for a container found: most fields hold none.
type containerWalk struct {
	id     ID
	source string
	fn     func(Container)
	path   []pathSegment
	keys   []string
}

// visit hands the container c, at path, to fn.
func (w *containerWalk) visit(path string, c map[string]any) {
	name, _ := c["name"].(string)
	ct := Container{Object: w.id, Source: w.source, Path: path, Name: name}
	switch v, ok := c["image"]; {
	case !ok:
		ct.ImageField = ImageMissing
	case isString(v):
		ct.Image = v.(string)
	default:
		ct.ImageField = ImageNotString
		ct.Image = fmt.Sprint(v)
	}
	w.fn(ct)
}

// pathSegment is a field name, or a list index when key is empty.
type pathSegment struct {
	key   string
	index int
}

func (w *containerWalk) walk(v any) {
	switch t := v.(type) {
	case map[string]any:
		// Only maps and lists can hold a container: sort just their names.
		start := len(w.keys)
		for k, e := range t {
			switch e.(type) {
			case map[string]any, []any:
				w.keys = append(w.keys, k)
			}
		}
		keys := w.keys[start:]
		sort.Strings(keys)
		for _, k := range keys {
			if list, ok := t[k].([]any); ok && isContainerField(k) {
				for i, item := range list {
					if c, ok := item.(map[string]any); ok {
						w.visit(w.pathOf(k, i), c)
					}
				}
				continue
			}
			w.path = append(w.path, pathSegment{key: k})
			w.walk(t[k])
			w.path = w.path[:len(w.path)-1]
		}
		w.keys = w.keys[:start]
	case []any:
		for i, item := range t {
			w.path = append(w.path, pathSegment{index: i})
			w.walk(item)
			w.path = w.path[:len(w.path)-1]
		}
	}
}

// pathOf is the field path of item i of the list in field k of the current
// path (spec.template.spec.containers[0]).
func (w *containerWalk) pathOf(k string, i int) string {
	var b strings.Builder
	b.Grow(64)
	for _, s := range append(w.path, pathSegment{key: k}, pathSegment{index: i}) {
		if s.key == "" {
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	return b.String()
}

func isContainerField(k string) bool {
	for _, f := range PodSpecContainerFields {
		if k == f {
			return true
		}
	}
	return false
}
