//go:build e2e

package crds

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/render"
)

// enumValue is a value the CRD accepts for each string enum of the API
// (the fill must pass validation, or the test would only prove a refusal).
var enumValue = map[reflect.Type]string{
	reflect.TypeFor[v1alpha1.Outcome]():       string(v1alpha1.OutcomeMismatch),
	reflect.TypeFor[v1alpha1.MatchKind]():     string(v1alpha1.MatchIndexChild),
	reflect.TypeFor[metav1.ConditionStatus](): string(metav1.ConditionTrue),
	reflect.TypeFor[v1alpha1.Comparison]():    string(v1alpha1.ComparisonLessEqual),
	reflect.TypeFor[v1alpha1.CheckVerdict]():  string(v1alpha1.CheckFailed),
}

// patterned are fields whose schema constrains the string; the fill writes a
// value that matches.
var patterned = map[string]string{
	"spec.renderedHash":                 "sha256:" + strings.Repeat("ab", 32),
	"status.renderedHash":               "sha256:" + strings.Repeat("cd", 32),
	"spec.charts[].digest":              "sha256:" + strings.Repeat("ef", 32),
	"spec.charts[].valuesSchema.digest": "sha256:" + strings.Repeat("01", 32),
}

// fill sets every field reachable from v to a distinct non-zero value (two
// elements per slice, one entry per map), so that a pruned field shows as a
// difference. A Go type it cannot fill fails the test: extend fill, never
// skip the field.
func fill(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch {
	case v.Type() == reflect.TypeFor[metav1.Time]():
		v.Set(reflect.ValueOf(metav1.NewTime(time.Date(2026, 12, 1, 18, 30, 0, 0, time.UTC))))
		return
	case v.Type() == reflect.TypeFor[metav1.TypeMeta](), v.Type() == reflect.TypeFor[metav1.ObjectMeta]():
		return // set by the test
	case v.Type() == reflect.TypeFor[metav1.Duration]():
		v.Set(reflect.ValueOf(metav1.Duration{Duration: time.Duration(7+len(path)) * time.Second}))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), path)
	case reflect.String:
		s, ok := enumValue[v.Type()]
		if !ok {
			s, ok = patterned[path]
		}
		if !ok {
			s = "value of " + path
		}
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(int64(7 + len(path)))
	case reflect.Float64:
		v.SetFloat(0.25 + float64(len(path)))
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(t, s.Index(i), path+"[]")
		}
		// Elements of a list-map (conditions) need distinct keys.
		if c, ok := s.Interface().([]metav1.Condition); ok {
			c[1].Type = "Other"
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, path+"{key}")
		fill(t, e, path+"{}")
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" && !f.Anonymous {
				name = f.Name
			}
			p := path
			if name != "" {
				p = strings.TrimPrefix(path+"."+name, ".")
			}
			fill(t, v.Field(i), p)
		}
	default:
		t.Fatalf("%s: fill cannot set Go %s: extend fill in e2e/crds", path, v.Type())
	}
}

// fullAcceptance is an Acceptance with every field of spec and status set.
func fullAcceptance(t *testing.T, namespace string) v1alpha1.Acceptance {
	t.Helper()
	var a v1alpha1.Acceptance
	fill(t, reflect.ValueOf(&a).Elem(), "")
	a.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.AcceptanceKind}
	a.ObjectMeta = metav1.ObjectMeta{Name: "every-field", Namespace: namespace}
	a.Spec.ObjectCount = 4
	// Both kinds of exception as a render writes them, besides the element
	// with every field set.
	a.Spec.Exceptions = append(a.Spec.Exceptions,
		v1alpha1.Exception{Image: "registry.example.test/vendor/agent:3.1", Pattern: "registry.example.test/vendor/agent:*",
			Reason: "vendor tags only", Object: "Deployment.apps web/web", Field: `spec.template.spec.containers[0].image (container "agent")`},
		v1alpha1.Exception{Secret: "legacy-token", Reason: "migration", Object: "Secret web/legacy-token", Field: "data"})
	return a
}

// exampleAcceptances are the Acceptances the example overlays render (the
// dev overlay uses an allow-list exception).
func exampleAcceptances(t *testing.T, root, namespace string) []v1alpha1.Acceptance {
	t.Helper()
	repo := filepath.Join(root, "examples", "gitops-env")
	var out []v1alpha1.Acceptance
	for _, env := range []string{"dev", "staging", "production"} {
		d, err := acceptance.Declare(context.Background(), acceptance.Request{
			Render:        render.Options{Root: repo, Path: filepath.Join("apps", "checkout", "overlays", env)},
			Environment:   env, // the registry's environment of the path, as render gives it
			SourceRepoURL: "https://git.example.test/gitops-env.git",
			Renderer:      "v0.0.0-e2e",
		})
		if err != nil {
			t.Fatalf("render the %s overlay: %v", env, err)
		}
		a := d.Acceptance
		a.Name, a.Namespace = "checkout-"+env, namespace
		out = append(out, a)
	}
	return out
}

// TestAcceptanceNothingPruned creates each Acceptance, writes its status,
// reads it back and requires spec and status to be what was sent, naming
// every field the API server dropped or changed.
func TestAcceptanceNothingPruned(t *testing.T) {
	root := testenv.RepoRoot(t)
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{
		CRDPaths: []string{filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml")},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const ns = "crds"
	if err := api.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for _, a := range append([]v1alpha1.Acceptance{fullAcceptance(t, ns)}, exampleAcceptances(t, root, ns)...) {
		t.Run(a.Name, func(t *testing.T) {
			sent, err := toUnstructured(&a)
			if err != nil {
				t.Fatal(err)
			}
			status := sent.Object["status"]
			delete(sent.Object, "status")
			if err := api.Client.Create(ctx, sent); err != nil {
				t.Fatalf("create Acceptance %s: %v", a.Name, err)
			}
			if status != nil {
				sent.Object["status"] = status
				if err := api.Client.Status().Update(ctx, sent); err != nil {
					t.Fatalf("update the status of Acceptance %s: %v", a.Name, err)
				}
			}
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(v1alpha1.AcceptanceGVK())
			if err := api.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: a.Name}, got); err != nil {
				t.Fatal(err)
			}
			want, err := toUnstructured(&a)
			if err != nil {
				t.Fatal(err)
			}
			// Decode what was read as what was sent (JSON numbers as float64).
			raw, err := json.Marshal(got.Object)
			if err != nil {
				t.Fatal(err)
			}
			got.Object = nil
			if err := json.Unmarshal(raw, &got.Object); err != nil {
				t.Fatal(err)
			}
			for _, part := range []string{"spec", "status"} {
				if want.Object[part] == nil {
					continue // no status sent: the CRD's default ({observedGeneration: 0}) is read back
				}
				for _, d := range diff(part, want.Object[part], got.Object[part]) {
					t.Errorf("Acceptance %s: %s (deploy/crds/throughline.dev_acceptances.yaml must declare every field)", a.Name, d)
				}
			}
		})
	}
}

// toUnstructured encodes a as the plugin does (acceptance.Marshal: status
// only when set) and decodes the JSON into an unstructured object.
func toUnstructured(a *v1alpha1.Acceptance) (*unstructured.Unstructured, error) {
	raw, err := acceptance.Marshal(a)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(raw, &u.Object); err != nil {
		return nil, fmt.Errorf("decode the Acceptance %s: %w", a.Name, err)
	}
	return u, nil
}

// diff lists the paths where got differs from want: "pruned" for a field
// sent and not read back, "added" for one read back and never sent.
func diff(path string, want, got any) []string {
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if wok && gok {
		keys := map[string]bool{}
		for k := range wm {
			keys[k] = true
		}
		for k := range gm {
			keys[k] = true
		}
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		sort.Strings(names)
		var out []string
		for _, k := range names {
			w, inW := wm[k]
			g, inG := gm[k]
			switch {
			case !inG:
				out = append(out, fmt.Sprintf("%s.%s pruned (sent %v)", path, k, short(w)))
			case !inW:
				out = append(out, fmt.Sprintf("%s.%s added (read back %v)", path, k, short(g)))
			default:
				out = append(out, diff(path+"."+k, w, g)...)
			}
		}
		return out
	}
	ws, wok := want.([]any)
	gs, gok := got.([]any)
	if wok && gok && len(ws) == len(gs) {
		var out []string
		for i := range ws {
			out = append(out, diff(fmt.Sprintf("%s[%d]", path, i), ws[i], gs[i])...)
		}
		return out
	}
	if !reflect.DeepEqual(want, got) {
		return []string{fmt.Sprintf("%s: sent %v, read back %v", path, short(want), short(got))}
	}
	return nil
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 120 {
		return string(b[:120]) + "..."
	}
	return string(b)
}
