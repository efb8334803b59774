package health

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// verifySpec checks a workload whose Pods are not compared live (a CronJob,
// whose Pods exist only while one of its Jobs runs, or any kind without a
// rollout rule) by its live object, read uncached: the image at each
// declared container's path must be the declared image. Such a workload is
// never counted among those whose Pods run the declared images
// (WorkloadReport.SpecOnly). A kind serve may not read is Unverifiable.
func (v *Verifier) verifySpec(ctx context.Context, ns string, w v1alpha1.Workload, why string) (WorkloadReport, error) {
	wr := WorkloadReport{APIVersion: w.APIVersion, Kind: w.Kind, Namespace: ns, Name: w.Name, Outcome: Pending, SpecOnly: true}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.FromAPIVersionAndKind(w.APIVersion, w.Kind))
	r := v.Uncached
	if r == nil {
		r = v.Client
	}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: w.Name}, u); err != nil {
		switch {
		case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
			wr.Message = "not found"
			return wr, nil
		case apierrors.IsForbidden(err):
			wr.Found, wr.Outcome = true, Unverifiable
			wr.Message = fmt.Sprintf("the live object cannot be read (forbidden): grant throughline serve get on %s", w.Kind)
			return wr, nil
		}
		return wr, fmt.Errorf("reading %s %s/%s: %w", w.Kind, ns, w.Name, err)
	}
	wr.Found, wr.Complete, wr.Outcome = true, true, Verified
	var msgs []string
	for _, c := range w.Containers {
		cr := ContainerReport{Name: c.Name, Init: declaredInit(c), Image: c.Image, Digest: c.Digest, Outcome: Verified, Skipped: why}
		if c.Digest == "" {
			cr.Skipped = "no declared digest (allow-listed exception)"
			wr.Containers = append(wr.Containers, cr)
			continue
		}
		live, ok := imageAt(u.Object, c.Path)
		switch {
		case !ok:
			cr.Outcome = Mismatch
			msgs = append(msgs, fmt.Sprintf("container %s: the live object has no image at %s", c.Name, c.Path))
		case live != c.Image:
			cr.Outcome = Mismatch
			msgs = append(msgs, fmt.Sprintf("container %s: the live object declares %s, the Acceptance %s", c.Name, live, c.Image))
		}
		wr.Outcome = Worse(wr.Outcome, cr.Outcome)
		wr.Containers = append(wr.Containers, cr)
	}
	if wr.Outcome == Verified {
		msgs = append(msgs, "the live object declares the declared images; "+why)
	}
	wr.Message = strings.Join(msgs, "; ")
	return wr, nil
}

var pathSegment = regexp.MustCompile(`^([A-Za-z0-9_-]+)(?:\[(\d+)\])?$`)

// imageAt reads the image of the container at path (as render.Container
// writes it, "spec.jobTemplate.spec.template.spec.containers[0]", with or
// without a trailing ".image") in obj.
func imageAt(obj map[string]any, path string) (string, bool) {
	var cur any = obj
	for _, seg := range strings.Split(strings.TrimSuffix(path, ".image"), ".") {
		m := pathSegment.FindStringSubmatch(seg)
		mp, ok := cur.(map[string]any)
		if m == nil || !ok {
			return "", false
		}
		cur = mp[m[1]]
		if m[2] != "" {
			i, _ := strconv.Atoi(m[2])
			list, ok := cur.([]any)
			if !ok || i >= len(list) {
				return "", false
			}
			cur = list[i]
		}
	}
	c, ok := cur.(map[string]any)
	if !ok {
		return "", false
	}
	s, ok := c["image"].(string)
	return s, ok
}
