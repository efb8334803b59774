package policy

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/throughline-dev/throughline/render"
)

// DeclaredContainer is a container whose image passed the pin rule (or an
// allow-list exception), with its digest.
type DeclaredContainer struct {
	render.Container
	Pinned Pinned
	// Exception is set when the image passed through the allow-list.
	Exception *Exception
}

// Result is the outcome of checking a rendered object set.
type Result struct {
	Violations []Violation
	Exceptions []Exception
	Containers []DeclaredContainer
}

// Err returns a *Refusal when there are violations, else nil.
func (r Result) Err() error {
	if len(r.Violations) == 0 {
		return nil
	}
	return &Refusal{Violations: r.Violations}
}

// CheckObjects applies the object rules (pinned images, unique identities,
// no Secret values) to a set rendered for the environment env ("" when none
// is known: only exceptions scoped to no environment hold) and returns every
// violation at once.
func CheckObjects(objs []render.Object, allow *AllowList, env string) Result {
	// An object holds a pod template or two: room for two containers
	// each saves growing the list of thousands.
	res := Result{Containers: make([]DeclaredContainer, 0, 2*len(objs))}
	type identity struct{ group, kind, namespace, name string } // the version does not make another object
	seen := make(map[identity]int, len(objs))
	images := map[string]ImageDecision{}
	var walker render.ContainerWalker
	check := func(c render.Container) { res.checkContainer(c, allow, env, images) }
	for i, o := range objs {
		id := o.ID()
		key := identity{id.Group, id.Kind, id.Namespace, id.Name}
		if j, dup := seen[key]; dup {
			first := objs[j]
			res.Violations = append(res.Violations, Violation{
				Rule: RuleDuplicateObject, File: o.Source, Object: id.String(),
				Reason: fmt.Sprintf("appears more than once in the render (also as %s in %s)", first.ID().APIVersion(), first.Source),
			})
		} else {
			seen[key] = i
		}
		res.checkSecret(o, id, allow, env)
		walker.Each(o, id, check)
	}
	sortViolations(res.Violations)
	res.Redact(render.NewRedactor(objs))
	return res
}

// Redact replaces, in every violation, the values of the Secrets red knows
// (render.Redactor: those of the render). CheckObjects redacts those of the
// objects it checks; a caller that has the render's App redacts again with
// app.Redactor(), which also knows the Secrets the render read and did not
// output.
// The file a violation names is the repository's path, shown as it is: a
// value it holds (a Secret's username that is the app's name) is not hidden
// elsewhere in the violation either.
func (r *Result) Redact(red *render.Redactor) {
	for i := range r.Violations {
		v := &r.Violations[i]
		vr := red.Public(v.File)
		v.Object, v.Field = vr.String(v.Object), vr.String(v.Field)
		v.Value, v.Reason = vr.String(v.Value), vr.String(v.Reason)
	}
}

// ImageDecision is the pin rule's decision on one image reference in one
// environment: pinned (Err nil), let through by an allow-list entry
// (Allowed set), or refused (Err says why).
type ImageDecision struct {
	Pinned  Pinned
	Err     error
	Allowed *AllowedImage
}

// Refused reports whether the pin rule refuses the image.
func (d ImageDecision) Refused() bool { return d.Err != nil && d.Allowed == nil }

// DecideImage is the pin rule for one image string in env: the one decision
// that render, the CMP, promote and pin --check share.
func DecideImage(image string, allow *AllowList, env string) ImageDecision {
	var d ImageDecision
	d.Pinned, d.Err = CheckImage(image)
	if d.Err != nil {
		if entry, ok := allow.Match(image, env); ok {
			d.Allowed = &entry
		}
	}
	return d
}

func (r *Result) checkContainer(c render.Container, allow *AllowList, env string, images map[string]ImageDecision) {
	var d ImageDecision
	if c.ImageField == render.ImageString {
		var ok bool
		if d, ok = images[c.Image]; !ok {
			d = DecideImage(c.Image, allow, env)
			images[c.Image] = d
		}
		if d.Err == nil {
			r.Containers = append(r.Containers, DeclaredContainer{Container: c, Pinned: d.Pinned})
			return
		}
	}
	field := c.Path + ".image"
	if c.Name != "" {
		field = fmt.Sprintf("%s (container %q)", field, c.Name)
	}
	v := Violation{File: c.Source, Object: c.Object.String(), Field: field, Value: c.Image}
	switch c.ImageField {
	case render.ImageMissing:
		v.Rule, v.Reason = RuleMissingImage, "container has no image"
		r.Violations = append(r.Violations, v)
		return
	case render.ImageNotString:
		v.Rule, v.Reason = RuleMissingImage, fmt.Sprintf("image is not a string: %s", c.Image)
		r.Violations = append(r.Violations, v)
		return
	}
	if entry := d.Allowed; entry != nil {
		ex := Exception{Image: c.Image, Pattern: entry.Pattern, Reason: entry.Reason, Object: v.Object, Field: field}
		r.Exceptions = append(r.Exceptions, ex)
		r.Containers = append(r.Containers, DeclaredContainer{Container: c, Exception: &ex})
		return
	}
	v.Rule, v.Reason = RuleUnpinnedImage, d.Err.Error()
	r.Violations = append(r.Violations, v)
}

var commitSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)

// CheckTree applies the source rules to an app's kustomization tree before
// anything is rendered or fetched: remote resources must name a full 40-hex
// commit, Helm charts an exact version.
func CheckTree(app *render.App) []Violation {
	var vs []Violation
	for _, k := range app.Kustomizations {
		for _, r := range k.Remote {
			if reason := remoteFloats(r.URL); reason != "" {
				vs = append(vs, Violation{Rule: RuleFloatingRemote, File: k.File, Field: r.Field, Value: r.URL,
					Reason: fmt.Sprintf("remote resource %q %s", r.URL, reason)})
			}
		}
		for _, h := range k.HelmCharts {
			field := h.Field + ".version"
			switch {
			case strings.TrimSpace(h.Version) == "":
				vs = append(vs, Violation{Rule: RuleFloatingChartVersion, File: k.File, Field: field,
					Reason: fmt.Sprintf("Helm chart %q has no version; set an exact version", h.Name)})
			default:
				if _, err := semver.Parse(strings.TrimPrefix(h.Version, "v")); err != nil {
					vs = append(vs, Violation{Rule: RuleFloatingChartVersion, File: k.File, Field: field, Value: h.Version,
						Reason: fmt.Sprintf("Helm chart %q version %q is not an exact semantic version (ranges float)", h.Name, h.Version)})
				}
			}
		}
	}
	sortViolations(vs)
	return vs
}

// remoteFloats returns why a remote kustomize resource is not pinned to a
// commit, or "" when it is: a git URL needs ref=<40 hex>, a plain HTTP file
// needs a 40-hex commit in its path.
func remoteFloats(raw string) string {
	base, query, _ := strings.Cut(raw, "?")
	if q, err := url.ParseQuery(query); err == nil {
		for _, key := range []string{"ref", "version"} {
			if v := q.Get(key); v != "" {
				if commitSHA.MatchString(v) {
					return ""
				}
				return fmt.Sprintf("is pinned to %s=%q, which can move; use a full 40-hex commit", key, v)
			}
		}
	}
	if u, err := url.Parse(base); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		for _, seg := range strings.Split(u.Path, "/") {
			if commitSHA.MatchString(seg) {
				return ""
			}
		}
	}
	return "names no commit; pin it with ?ref=<full 40-hex commit>"
}
