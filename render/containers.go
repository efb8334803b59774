package render

import (
	"fmt"
	"sort"
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
	walkContainers(o.Map, "", func(path string, c map[string]any) {
		name, _ := c["name"].(string)
		ct := Container{Object: o.ID(), Source: o.Source, Path: path, Name: name}
		switch v, ok := c["image"]; {
		case !ok:
			ct.ImageField = ImageMissing
		case isString(v):
			ct.Image = v.(string)
		default:
			ct.ImageField = ImageNotString
			ct.Image = fmt.Sprint(v)
		}
		out = append(out, ct)
	})
	return out
}

func isString(v any) bool { _, ok := v.(string); return ok }

func walkContainers(v any, path string, visit func(string, map[string]any)) {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if list, ok := t[k].([]any); ok && isContainerField(k) {
				for i, item := range list {
					if c, ok := item.(map[string]any); ok {
						visit(fmt.Sprintf("%s[%d]", p, i), c)
					}
				}
				continue
			}
			walkContainers(t[k], p, visit)
		}
	case []any:
		for i, item := range t {
			walkContainers(item, fmt.Sprintf("%s[%d]", path, i), visit)
		}
	}
}

func isContainerField(k string) bool {
	for _, f := range PodSpecContainerFields {
		if k == f {
			return true
		}
	}
	return false
}
