package health

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// TestCronJobNotCountedAsVerifiedLive: issue 22 saw a CronJob counted as
// Verified while its message said it was not verified live. A CronJob's
// Pods exist only while one of its Jobs runs, so they cannot be compared;
// its live object can: the image at each declared container's path must be
// the declared one (another is a mismatch, a missing CronJob is not found),
// and the report says it was checked by its spec, not counted among the
// workloads whose Pods run the declared images.
func TestCronJobNotCountedAsVerifiedLive(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		live     string // the live CronJob's image; "" none applied
		outcome  Outcome
		reason   string
		contains []string
	}{
		{"live spec declares the digest", "declared", Verified, v1alpha1.ReasonVerified,
			[]string{"1 workloads, 2 Pods run the declared images", "1 checked by its live object only, Pods not compared (CronJob ns-0/nightly)"}},
		{"live spec runs another image", "ghcr.io/ops/nightly@sha256:" + strings.Repeat("e", 64), Mismatch, v1alpha1.ReasonImageMismatch,
			[]string{"CronJob ns-0/nightly: container job: the live object declares ghcr.io/ops/nightly@sha256:eeee"}},
		{"not applied", "", Pending, v1alpha1.ReasonWorkloadNotFound, []string{"CronJob ns-0/nightly"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newBenchFixture(t, 1, 2)
			acc := f.acceptances[0]
			declared := "ghcr.io/ops/nightly@sha256:" + strings.Repeat("d", 64)
			ws, _, _ := unstructured.NestedSlice(acc.Object, "spec", "workloads")
			ws = append(ws, map[string]any{"apiVersion": "batch/v1", "kind": "CronJob", "namespace": "ns-0", "name": "nightly",
				"containers": []any{map[string]any{"name": "job", "path": "spec.jobTemplate.spec.template.spec.containers[0]",
					"image": declared, "digest": "sha256:" + strings.Repeat("d", 64)}}})
			_ = unstructured.SetNestedSlice(acc.Object, ws, "spec", "workloads")
			if c.live != "" {
				image := c.live
				if image == "declared" {
					image = declared
				}
				cj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "CronJob",
					"metadata": map[string]any{"namespace": "ns-0", "name": "nightly"},
					"spec": map[string]any{"schedule": "@daily", "jobTemplate": map[string]any{"spec": map[string]any{"template": map[string]any{
						"spec": map[string]any{"containers": []any{map[string]any{"name": "job", "image": image}}}}}}}}}
				f.reader.add(cj)
			}
			rep, err := f.verifier.Verify(context.Background(), acc)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Outcome != c.outcome || rep.Reason != c.reason {
				t.Fatalf("%s %s %q, want %s %s", rep.Outcome, rep.Reason, rep.Message, c.outcome, c.reason)
			}
			for _, want := range c.contains {
				if !strings.Contains(rep.Message, want) {
					t.Errorf("message %q lacks %q", rep.Message, want)
				}
			}
		})
	}
}
