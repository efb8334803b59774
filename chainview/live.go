package chainview

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// LiveFromAcceptances is what runs, by Key(app, env), as the verifier
// wrote it in the Acceptances' status: per container, the declared digest
// where the verifier found it running (Verified), else the digest of each
// observed imageID. An Acceptance without spec.environment, or not
// verified yet (no workload status), says nothing.
func LiveFromAcceptances(list []v1alpha1.Acceptance) map[string]Live {
	out := map[string]Live{}
	for _, a := range list {
		if a.Spec.App == "" || a.Spec.Environment == "" || len(a.Status.Workloads) == 0 {
			continue
		}
		k := Key(a.Spec.App, a.Spec.Environment)
		l := out[k]
		for _, w := range a.Status.Workloads {
			for _, c := range w.Containers {
				for _, d := range running(c) {
					if !slices.Contains(l.Digests, d) {
						l.Digests = append(l.Digests, d)
					}
				}
			}
		}
		sort.Strings(l.Digests)
		src := a.Namespace + "/" + a.Name
		if l.Source != "" {
			src = l.Source + ", " + src
		}
		l.Source = src
		out[k] = l
	}
	return out
}

// running is the digests one container's status says run.
func running(c v1alpha1.ContainerStatus) []string {
	if c.Outcome == v1alpha1.OutcomeVerified && c.Digest != "" {
		return []string{c.Digest}
	}
	var out []string
	for _, o := range c.Observed {
		if i := strings.LastIndex(o.ImageID, "@"); i >= 0 {
			out = append(out, o.ImageID[i+1:])
		} else if strings.HasPrefix(o.ImageID, "sha256:") {
			out = append(out, o.ImageID)
		}
	}
	return out
}

// WithLive is a copy of m (its apps and cells copied, the chains shared)
// whose cells compare live with what Git declares.
func (m *Model) WithLive(live map[string]Live) *Model {
	c := *m
	c.Apps = make([]*App, len(m.Apps))
	for i, a := range m.Apps {
		ac := *a
		ac.Cells = make([]*Cell, len(a.Cells))
		for j, cell := range a.Cells {
			cc := *cell
			cc.Live, cc.Drift = nil, ""
			cc.drift(live)
			ac.Cells[j] = &cc
		}
		c.Apps[i] = &ac
	}
	return &c
}

// ListFunc lists the objects of list's kind in all namespaces (a
// controller-runtime client's List does). The web view takes it as a
// function so that it needs no Kubernetes client itself.
type ListFunc func(ctx context.Context, list *unstructured.UnstructuredList) error

// GetFunc reads one object of the Kubernetes API by namespace and name
// into u (whose GroupVersionKind says which kind), as controller-runtime's
// client.Get.
type GetFunc func(ctx context.Context, namespace, name string, u *unstructured.Unstructured) error

// KubeApplications is the ApplicationLookup that reads Argo CD
// Applications through get (what serve's web view gives
// Handler.Applications): a NotFound is ErrNoApplication.
func KubeApplications(get GetFunc) ApplicationLookup {
	return func(ctx context.Context, namespace, name string) (*ArgoApplication, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"})
		err := get(ctx, namespace, name, u)
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the Application %s/%s: %w", namespace, name, ErrNoApplication)
		}
		if err != nil {
			return nil, fmt.Errorf("reading the Application %s/%s: %w", namespace, name, err)
		}
		project, _, _ := unstructured.NestedString(u.Object, "spec", "project")
		return &ArgoApplication{Project: project, Labels: u.GetLabels(), Annotations: u.GetAnnotations()}, nil
	}
}

// KubeLive asks the API server list reads what runs: every Acceptance, in
// all namespaces, through LiveFromAcceptances (what serve's web view gives
// Handler.Live). One that does not decode is skipped.
func KubeLive(list ListFunc) func(context.Context) (map[string]Live, error) {
	return func(ctx context.Context) (map[string]Live, error) {
		var all unstructured.UnstructuredList
		all.SetGroupVersionKind(v1alpha1.AcceptanceListGVK())
		if err := list(ctx, &all); err != nil {
			return nil, fmt.Errorf("web view: listing Acceptances: %w", err)
		}
		items := make([]v1alpha1.Acceptance, 0, len(all.Items))
		for _, u := range all.Items {
			var a v1alpha1.Acceptance
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &a); err == nil {
				items = append(items, a)
			}
		}
		return LiveFromAcceptances(items), nil
	}
}
