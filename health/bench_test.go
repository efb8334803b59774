package health

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/registry"
)

// indexReader is what controller-runtime's cache reader does, over client-go
// indexers (one per kind, indexed by namespace): Get by key, List by
// namespace and label selector, deep copies of the matches only.
type indexReader struct {
	stores map[string]toolscache.Indexer // by Go type name
}

func newIndexReader() *indexReader { return &indexReader{stores: map[string]toolscache.Indexer{}} }

func kindOf(o any) string { return strings.TrimPrefix(fmt.Sprintf("%T", o), "*") }

func (r *indexReader) add(objs ...client.Object) {
	for _, o := range objs {
		k := kindOf(o)
		s, ok := r.stores[k]
		if !ok {
			s = toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
			r.stores[k] = s
		}
		if err := s.Add(o); err != nil {
			panic(err)
		}
	}
}

func (r *indexReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	s, ok := r.stores[kindOf(obj)]
	if !ok {
		return notFound(key.Name)
	}
	k := key.Name
	if key.Namespace != "" {
		k = key.Namespace + "/" + key.Name
	}
	item, ok, err := s.GetByKey(k)
	if err != nil {
		return err
	}
	if !ok {
		return notFound(key.Name)
	}
	// As controller-runtime's cache reader: a deep copy set into obj.
	src := item.(k8sruntime.Object).DeepCopyObject()
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(src).Elem())
	return nil
}

func (r *indexReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	item := strings.TrimSuffix(kindOf(list), "List")
	s, ok := r.stores[item]
	if !ok {
		return nil
	}
	objs, err := s.ByIndex(toolscache.NamespaceIndex, lo.Namespace)
	if err != nil {
		return err
	}
	sel := lo.LabelSelector
	if sel == nil {
		sel = labels.Everything()
	}
	out := make([]k8sruntime.Object, 0, len(objs))
	for _, o := range objs {
		mo := o.(client.Object)
		if sel.Matches(labels.Set(mo.GetLabels())) {
			out = append(out, mo.DeepCopyObject())
		}
	}
	return meta.SetList(list, out)
}

// notFound is the API server's (and the cache's) not-found error.
func notFound(name string) error {
	return apierrors.NewNotFound(schema.GroupResource{}, name)
}

// benchFixture is workloads×pods Pods of Deployments on nodes of two
// platforms, running one multi-arch image reported in the three imageID
// forms, in an in-process registry that counts requests.
type benchFixture struct {
	reader      *indexReader
	verifier    *Verifier
	acceptances []*unstructured.Unstructured
	requests    *atomic.Int64
}

func newBenchFixture(b testing.TB, workloads, podsPer int) *benchFixture {
	b.Helper()
	var requests atomic.Int64
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		h.ServeHTTP(w, r)
	}))
	b.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	plats := []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}}
	child, config := map[string]string{}, map[string]string{}
	for _, p := range plats {
		img, err := random.Image(256, 1)
		if err != nil {
			b.Fatal(err)
		}
		d, _ := img.Digest()
		c, _ := img.ConfigName()
		child[p.Architecture], config[p.Architecture] = d.String(), c.String()
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	ref, _ := name.ParseReference(host+"/bench/app:v1", name.Insecure)
	if err := remote.WriteIndex(ref, idx); err != nil {
		b.Fatal(err)
	}
	requests.Store(0) // count what the verifier asks, not the push
	id, _ := idx.Digest()
	image := host + "/bench/app:v1@" + id.String()
	repo := host + "/bench/app"

	reg, err := registry.New(registry.Options{})
	if err != nil {
		b.Fatal(err)
	}
	r := newIndexReader()
	nodes := []string{"amd64", "arm64"}
	for _, n := range nodes {
		r.add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + n, Labels: map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: n}}})
	}
	f := &benchFixture{reader: r, requests: &requests, verifier: &Verifier{Client: r, Registry: reg}}
	for i := range workloads {
		ns := fmt.Sprintf("ns-%d", i%10)
		nm := fmt.Sprintf("web-%d", i)
		lbl := map[string]string{"app": nm}
		tpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: nm, UID: k8stypes.UID("d-" + nm), Generation: 1},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(int32(podsPer)), Selector: &metav1.LabelSelector{MatchLabels: lbl}, Template: tpl},
			Status:     appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: int32(podsPer), UpdatedReplicas: int32(podsPer)},
		}
		rsTpl := *tpl.DeepCopy()
		rsTpl.Labels = map[string]string{"app": nm, LabelPodTemplateHash: "h1"}
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: nm + "-h1", Labels: rsTpl.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: nm, UID: d.UID, Controller: ptr.To(true)}}},
			Spec: appsv1.ReplicaSetSpec{Template: rsTpl}}
		r.add(d, rs)
		for j := range podsPer {
			arch := nodes[j%2]
			imageID := []string{repo + "@" + id.String(), repo + "@" + child[arch], config[arch]}[j%3]
			r.add(&corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", nm, j), Labels: rsTpl.Labels},
				Spec:       corev1.PodSpec{NodeName: "node-" + arch, Containers: []corev1.Container{{Name: "app", Image: image}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
					Name: "app", Image: image, ImageID: imageID, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				}}},
			})
		}
		acc := NewAcceptance()
		acc.SetNamespace(ns)
		acc.SetName(nm)
		acc.SetGeneration(1)
		acc.Object["spec"] = map[string]any{"app": nm, "renderedHash": "sha256:" + strings.Repeat("c", 64), "workloads": []any{map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment", "namespace": ns, "name": nm,
			"containers": []any{map[string]any{"name": "app", "path": "spec.template.spec.containers[0].image", "image": image, "digest": id.String()}},
		}}}
		f.acceptances = append(f.acceptances, acc)
	}
	return f
}

// pass verifies every Acceptance once; all must be Verified.
func (f *benchFixture) pass(b testing.TB) {
	ctx := context.Background()
	for _, a := range f.acceptances {
		rep, err := f.verifier.Verify(ctx, a)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Outcome != Verified {
			b.Fatalf("%s: %s %s", a.GetName(), rep.Reason, rep.Message)
		}
	}
}

// BenchmarkVerify1000Pods: 100 Deployments of 10 Pods each (1,000 Pods) in
// 10 namespaces on arm64 and amd64 nodes, imageIDs in all three forms
// (exact, index child, config digest). One op is a full pass over the 100
// Acceptances after the cache has synced; the registry was asked during
// the first pass only (registry-requests/op is 0).
func BenchmarkVerify1000Pods(b *testing.B) {
	f := newBenchFixture(b, 100, 10)
	f.pass(b) // resolves the index once
	first := f.requests.Load()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		f.pass(b)
	}
	b.StopTimer()
	if n := f.requests.Load() - first; n != 0 {
		b.Fatalf("%d registry requests after the first pass, want 0", n)
	}
	b.ReportMetric(float64(first), "first-pass-registry-requests")
	b.ReportMetric(0, "registry-requests/op")
	b.ReportMetric(1000, "pods/op")
}

// BenchmarkVerify10000Pods: 1,000 Deployments of 10 Pods (10,000 Pods).
// heap-MB is the live heap holding the cached objects (what the
// controller's informers hold, managedFields stripped); B/op is one full
// pass.
func BenchmarkVerify10000Pods(b *testing.B) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f := newBenchFixture(b, 1000, 10)
	runtime.GC()
	runtime.ReadMemStats(&after)
	f.pass(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		f.pass(b)
	}
	b.StopTimer()
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap-MB")
	b.ReportMetric(10000, "pods/op")
	runtime.KeepAlive(f)
}

// TestSecondPassAsksNoRegistry is the benchmark's claim as a test.
func TestSecondPassAsksNoRegistry(t *testing.T) {
	t.Parallel()
	f := newBenchFixture(t, 5, 3)
	f.pass(t)
	first := f.requests.Load()
	f.pass(t)
	if first == 0 || f.requests.Load() != first {
		t.Fatalf("registry requests: first pass %d, after a second pass %d", first, f.requests.Load())
	}
}
