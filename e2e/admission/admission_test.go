//go:build e2e

package admission

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/internal/testenv"
)

const (
	pinned   = "127.0.0.1:5001/demo/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	unpinned = "127.0.0.1:5001/demo/app:v1"
)

func pod(ns, name string, containers, initContainers []string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for i, img := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c" + string(rune('a'+i)), Image: img})
	}
	for i, img := range initContainers {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "i" + string(rune('a'+i)), Image: img})
	}
	return p
}

// TestPinnedImagesPolicy applies the example policy and binding and checks
// what the API server admits.
func TestPinnedImagesPolicy(t *testing.T) {
	root := testenv.RepoRoot(t)
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c := api.Client

	data, err := os.ReadFile(filepath.Join(root, "deploy", "flux", "admission-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := kio.FromBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		s, err := n.String()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, u); err != nil {
			t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	const enforced, open = "enforced", "open"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: enforced, Labels: map[string]string{"throughline.dev/enforce": "true"},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: open}}); err != nil {
		t.Fatal(err)
	}

	// The policy takes effect once the API server has compiled it: poll
	// until an unpinned Pod is refused.
	var refusal error
	for i := 0; ; i++ {
		err := c.Create(ctx, pod(enforced, fmt.Sprintf("unpinned-%d", i), []string{unpinned}, nil))
		if err != nil {
			refusal = err
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the policy never took effect")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !apierrors.IsInvalid(refusal) && !apierrors.IsForbidden(refusal) {
		t.Fatalf("unpinned Pod: got %v, want a refusal by the policy", refusal)
	}
	if msg := refusal.Error(); !strings.Contains(msg, "not pinned by digest") || !strings.Contains(msg, unpinned) {
		t.Fatalf("refusal does not name the image: %v", refusal)
	}
	t.Logf("refused: %v", refusal)

	// An unpinned init container is refused too, and named.
	err = c.Create(ctx, pod(enforced, "init", []string{pinned}, []string{"busybox"}))
	if err == nil || !strings.Contains(err.Error(), "busybox") {
		t.Fatalf("unpinned init container: got %v, want a refusal naming busybox", err)
	}
	// A pinned Pod is admitted.
	if err := c.Create(ctx, pod(enforced, "pinned", []string{pinned}, []string{pinned})); err != nil {
		t.Fatalf("pinned Pod refused: %v", err)
	}
	// A namespace without the label is not enforced.
	if err := c.Create(ctx, pod(open, "unpinned", []string{unpinned}, nil)); err != nil {
		t.Fatalf("unpinned Pod in an unlabelled namespace refused: %v", err)
	}
}
