package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FreezeImages creates (on) or deletes (off) a real ValidatingAdmissionPolicy
// and its binding that deny any change of the container images of the
// Deployment name in namespace ns with message, as a platform team's change
// freeze does, and waits until the API server enforces it (or no longer
// does), by a server-side dry-run of such a change. A controller's apply
// of a new image is then refused by the API server: nothing is applied.
func FreezeImages(ctx context.Context, t testing.TB, c client.Client, ns, name, message string, on bool) {
	t.Helper()
	policyName := "freeze-" + name
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
		"metadata": map[string]any{"name": policyName},
		"spec": map[string]any{
			"failurePolicy": "Fail",
			"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
				"apiGroups": []any{"apps"}, "apiVersions": []any{"v1"}, "operations": []any{"UPDATE"}, "resources": []any{"deployments"},
			}}},
			"validations": []any{map[string]any{
				"expression": fmt.Sprintf("object.metadata.name != %q || ", name) +
					"object.spec.template.spec.containers.map(c, c.image) == oldObject.spec.template.spec.containers.map(c, c.image)",
				"message": message,
			}},
		},
	}}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
		"metadata": map[string]any{"name": policyName},
		"spec": map[string]any{
			"policyName": policyName, "validationActions": []any{"Deny"},
			"matchResources": map[string]any{"namespaceSelector": map[string]any{
				"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns},
			}},
		},
	}}
	for _, u := range []*unstructured.Unstructured{policy, binding} {
		if on {
			if err := c.Create(ctx, u); err != nil {
				t.Fatalf("freeze %s/%s: create %s: %v", ns, name, u.GetKind(), err)
			}
		} else if err := c.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("lift the freeze of %s/%s: delete %s: %v", ns, name, u.GetKind(), err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		d := &unstructured.Unstructured{}
		d.SetAPIVersion("apps/v1")
		d.SetKind("Deployment")
		d.SetNamespace(ns)
		d.SetName(name)
		patch := `{"spec":{"template":{"spec":{"containers":[{"name":"freeze-probe","image":"registry.invalid/probe@sha256:` +
			strings.Repeat("0", 64) + `"}]}}}}`
		err := c.Patch(ctx, d, client.RawPatch(types.StrategicMergePatchType, []byte(patch)), client.DryRunAll)
		if on && err != nil && strings.Contains(err.Error(), message) || !on && err == nil {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("admission policy %s enforced %v: a dry-run image change of %s/%s answered %v", policyName, on, ns, name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
