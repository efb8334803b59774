package notifier

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/health"
	"github.com/throughline-dev/throughline/promotion"
)

// The tests of this file read the Acceptance through KubeAcceptances on
// the fake dynamic client (k8s.io/client-go/dynamic/fake): a real API
// server runs only in the e2e suite (e2e/notifier, e2e/rollback).

// acceptanceIn is the verified Acceptance of checkout in production, as
// acceptance.Declare labels it, in namespace ns under name.
func acceptanceIn(t testing.TB, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := health.NewAcceptance()
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetGeneration(2)
	u.SetLabels(map[string]string{v1alpha1.LabelManagedBy: "throughline", v1alpha1.LabelApp: "checkout", v1alpha1.LabelEnvironment: "production"})
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&verified(name).Status)
	must(t, err)
	u.Object["spec"] = map[string]any{"app": "checkout", "environment": "production", "renderedHash": hashA}
	u.Object["status"] = st
	return u
}

// application is the Argo CD Application checkout in argocd, deploying to
// destNS ("" leaves spec.destination.namespace out).
func application(destNS string) *unstructured.Unstructured {
	dest := map[string]any{"server": "https://kubernetes.default.svc"}
	if destNS != "" {
		dest["namespace"] = destNS
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "checkout", "namespace": "argocd"},
		"spec":     map[string]any{"project": "default", "destination": dest},
	}}
}

// kustomization is the Flux Kustomization checkout in flux-system (the
// involvedObject of fluxBody) with spec.targetNamespace target ("" leaves
// it out) and status.inventory listing inventory (IDs).
func kustomization(target string, inventory ...string) *unstructured.Unstructured {
	spec := map[string]any{"interval": "5m", "path": "./apps/checkout/overlays/production", "prune": true}
	if target != "" {
		spec["targetNamespace"] = target
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "checkout", "namespace": "flux-system"},
		"spec":     spec,
	}}
	if len(inventory) > 0 {
		var entries []any
		for _, id := range inventory {
			entries = append(entries, map[string]any{"id": id, "v": "v1"})
		}
		u.Object["status"] = map[string]any{"inventory": map[string]any{"entries": entries}}
	}
	return u
}

func fakeKube(objs ...runtime.Object) *KubeAcceptances {
	return &KubeAcceptances{Client: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{
			AcceptanceResource: "AcceptanceList", ApplicationResource: "ApplicationList", KustomizationResource: "KustomizationList",
		}, objs...)}
}

// TestAcceptanceBoundToTheControllerObject: the notifier reads the
// Acceptance only in the namespace the reporting Application or
// Kustomization deploys to; a decoy with the same labels elsewhere is
// ignored, two in that namespace are refused, and a controller object that
// binds no namespace decides nothing.
func TestAcceptanceBoundToTheControllerObject(t *testing.T) {
	t.Parallel()
	const inv = "shop_checkout_throughline.dev_Acceptance"
	for _, tc := range []struct {
		name   string
		source string
		objs   func(t testing.TB) []runtime.Object
		code   int
		result string
		// acceptance is the evidence's Acceptance when decided; reason a
		// part of the answer's reason otherwise.
		acceptance, reason string
	}{
		{name: "argocd decoy alone", source: "argocd", code: http.StatusServiceUnavailable, result: resultWait, reason: "no Acceptance object",
			objs: func(t testing.TB) []runtime.Object {
				return []runtime.Object{application("shop"), acceptanceIn(t, "evil", "checkout")}
			}},
		{name: "argocd decoy and real", source: "argocd", code: http.StatusOK, result: resultAccepted, acceptance: "shop/checkout",
			objs: func(t testing.TB) []runtime.Object {
				return []runtime.Object{application("shop"), acceptanceIn(t, "evil", "checkout"), acceptanceIn(t, "shop", "checkout")}
			}},
		{name: "argocd two in the bound namespace", source: "argocd", code: http.StatusConflict, result: resultAmbiguous, reason: "shop/checkout, shop/decoy",
			objs: func(t testing.TB) []runtime.Object {
				return []runtime.Object{application("shop"), acceptanceIn(t, "shop", "checkout"), acceptanceIn(t, "shop", "decoy")}
			}},
		{name: "argocd application missing", source: "argocd", code: http.StatusServiceUnavailable, result: resultWait, reason: "Application argocd/checkout",
			objs: func(t testing.TB) []runtime.Object { return []runtime.Object{acceptanceIn(t, "shop", "checkout")} }},
		{name: "argocd no destination namespace", source: "argocd", code: http.StatusConflict, result: resultUnbound, reason: "spec.destination.namespace",
			objs: func(t testing.TB) []runtime.Object {
				return []runtime.Object{application(""), acceptanceIn(t, "shop", "checkout")}
			}},
		{name: "flux targetNamespace, decoy alone", source: "flux", code: http.StatusServiceUnavailable, result: resultWait, reason: "no Acceptance object",
			objs: func(t testing.TB) []runtime.Object {
				return []runtime.Object{kustomization("shop"), acceptanceIn(t, "evil", "checkout")}
			}},
		{name: "flux targetNamespace, decoy and real", source: "flux", code: http.StatusOK, result: resultAccepted, acceptance: "shop/checkout",
			objs: func(t testing.TB) []runtime.Object {
				return []runtime.Object{kustomization("shop"), acceptanceIn(t, "evil", "checkout"), acceptanceIn(t, "shop", "checkout")}
			}},
		{name: "flux targetNamespace overrides the inventory", source: "flux", code: http.StatusOK, result: resultAccepted, acceptance: "shop/checkout",
			objs: func(t testing.TB) []runtime.Object {
				return []runtime.Object{kustomization("shop", "evil_checkout_throughline.dev_Acceptance"),
					acceptanceIn(t, "evil", "checkout"), acceptanceIn(t, "shop", "checkout")}
			}},
		{name: "flux inventory, decoy and real", source: "flux", code: http.StatusOK, result: resultAccepted, acceptance: "shop/checkout",
			objs: func(t testing.TB) []runtime.Object {
				return []runtime.Object{kustomization("", "shop_checkout_apps_Deployment", inv),
					acceptanceIn(t, "evil", "checkout"), acceptanceIn(t, "shop", "checkout")}
			}},
		{name: "flux two in the bound namespace", source: "flux", code: http.StatusConflict, result: resultAmbiguous, reason: "ambiguous",
			objs: func(t testing.TB) []runtime.Object {
				return []runtime.Object{kustomization("", inv), acceptanceIn(t, "shop", "checkout"), acceptanceIn(t, "shop", "decoy")}
			}},
		{name: "flux no Acceptance applied yet", source: "flux", code: http.StatusServiceUnavailable, result: resultWait, reason: "status.inventory",
			objs: func(t testing.TB) []runtime.Object {
				return []runtime.Object{kustomization("", "shop_checkout_apps_Deployment"), acceptanceIn(t, "shop", "checkout")}
			}},
		{name: "flux kustomization missing", source: "flux", code: http.StatusServiceUnavailable, result: resultWait, reason: "Kustomization flux-system/checkout",
			objs: func(t testing.TB) []runtime.Object { return []runtime.Object{acceptanceIn(t, "shop", "checkout")} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "checkout")
			f.handler.proc.Live = fakeKube(tc.objs(t)...)
			tip := f.tip()
			var code int
			var rep reply
			if tc.source == "argocd" {
				code, rep = f.argo(argoBody(f.desired["checkout"], "Healthy"))
			} else {
				code, rep = f.flux(fluxBody(t, "checkout", f.desired["checkout"], "ReconciliationSucceeded"))
			}
			if code != tc.code || rep.Result != tc.result || !strings.Contains(rep.Reason, tc.reason) {
				t.Fatalf("%d %+v, want %d %s with a reason naming %q", code, rep, tc.code, tc.result, tc.reason)
			}
			rec := f.checkoutRecord()
			if tc.acceptance == "" {
				if f.tip() != tip || rec.State != promotion.Reconciling {
					t.Fatalf("undecided delivery wrote: tip %s, record %s", f.tip(), rec.State)
				}
				return
			}
			ev := f.evidenceOf(rec)
			if rec.State != promotion.Accepted || ev.Acceptance != tc.acceptance {
				t.Fatalf("record %s, evidence names Acceptance %q, want %q", rec.State, ev.Acceptance, tc.acceptance)
			}
		})
	}
}

// TestKubeAcceptancesNamespaceFlag: --notifier-acceptance-namespace still
// restricts the lookup: a controller object binding another namespace is
// refused as unbound, not searched.
func TestKubeAcceptancesNamespaceFlag(t *testing.T) {
	t.Parallel()
	k := fakeKube(application("shop"), acceptanceIn(t, "shop", "checkout"))
	k.Namespace = "payments"
	ev := Event{Source: "argocd", App: "checkout", Environment: "production", Ref: ObjectRef{Kind: "Application", Namespace: "argocd", Name: "checkout"}}
	if _, err := k.Get(context.Background(), ev); !errors.Is(err, ErrUnbound) {
		t.Fatalf("got %v, want ErrUnbound", err)
	}
	k.Namespace = "shop"
	live, err := k.Get(context.Background(), ev)
	if err != nil || live.Namespace != "shop" {
		t.Fatalf("%+v %v", live, err)
	}
}

// TestControllerRefFromDeliveries: the controller object is the Flux
// event's involvedObject and the Argo CD payload's application and
// namespace; a Flux event about another kind binds nothing.
func TestControllerRefFromDeliveries(t *testing.T) {
	t.Parallel()
	ev, err := decodeFlux(fluxBody(t, "checkout", srcRev, "ReconciliationSucceeded"))
	must(t, err)
	if want := (ObjectRef{Kind: "Kustomization", Namespace: "flux-system", Name: "checkout"}); ev.Ref != want {
		t.Errorf("flux ref %+v, want %+v", ev.Ref, want)
	}
	ev, err = decodeArgoCD(argoBody(srcRev, "Healthy"))
	must(t, err)
	if want := (ObjectRef{Kind: "Application", Namespace: "argocd", Name: "checkout"}); ev.Ref != want {
		t.Errorf("argocd ref %+v, want %+v", ev.Ref, want)
	}
	k := fakeKube()
	hr := Event{App: "checkout", Environment: "production", Ref: ObjectRef{Kind: "HelmRelease", Namespace: "flux-system", Name: "checkout"}}
	if _, err := k.Get(context.Background(), hr); !errors.Is(err, ErrUnbound) {
		t.Errorf("HelmRelease: %v, want ErrUnbound", err)
	}
	noNS := Event{App: "checkout", Environment: "production", Ref: ObjectRef{Kind: "Application", Name: "checkout"}}
	if _, err := k.Get(context.Background(), noNS); !errors.Is(err, ErrUnbound) {
		t.Errorf("Application without a namespace: %v, want ErrUnbound", err)
	}
}

// evidenceOf is the evidence of rec's decision on the origin's main.
func (f *fixture) evidenceOf(rec *promotion.Record) *evidence.Record {
	f.t.Helper()
	p := evidence.Path("production", "checkout", rec.PromotionID)
	ev, err := evidence.Parse(p, []byte(f.show(p)))
	must(f.t, err)
	return ev
}
