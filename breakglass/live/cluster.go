// Package live is the cluster side of break-glass: it pauses and resumes
// exactly one Argo CD Application or Flux Kustomization (Pause, Undo,
// Restore, Flapping), reads the live objects a write-back compares
// (ReadLive, ProposeWriteback), and watches pauses that outlived their
// expiry (ExpiryMonitor). The records, the three-way comparison and the
// evidence are package breakglass, which needs no Kubernetes client.
package live

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/breakglass"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

// Get reads the controller object.
func Get(ctx context.Context, c client.Client, t breakglass.Target) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(t.GVK())
	if err := c.Get(ctx, types.NamespacedName{Namespace: t.ObjectNamespace(), Name: t.Name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, exitcode.Refuse(breakglass.RuleController, "%s not found: name the controller object with --name/--namespace", t)
		}
		return nil, fmt.Errorf("read %s: %w", t, err)
	}
	return u, nil
}

// Pause suspends reconciliation of exactly the target: it checks that no
// parent would restore it, reads the live objects it manages, and patches
// the target with a resourceVersion precondition (of two operators pausing
// at once, exactly one wins; the other gets a *ConflictError). It returns
// the record (state PAUSED) to commit.
func Pause(ctx context.Context, c client.Client, req breakglass.Request) (*breakglass.Record, error) {
	t := req.Target
	u, err := Get(ctx, c, t)
	if err != nil {
		return nil, err
	}
	if err := breakglass.CheckTarget(req, u); err != nil {
		return nil, err
	}
	if err := restorers(ctx, c, u, t); err != nil {
		return nil, err
	}
	if ticket, ok := u.GetAnnotations()[breakglass.AnnotationTicket]; ok {
		return nil, exitcode.Refuse(breakglass.RuleController, "%s is already paused (annotation %s: %s)", t, breakglass.AnnotationTicket, ticket)
	}
	rec := &breakglass.Record{SchemaVersion: breakglass.SchemaVersion, App: req.App, Environment: req.Env, Controller: t.Controller,
		State: breakglass.Paused,
		Object: breakglass.Ref{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(),
			UID: string(u.GetUID()), ResourceVersion: u.GetResourceVersion()},
		Operator: req.Operator, Ticket: req.Ticket, PausedAt: req.Now.UTC().Truncate(time.Second), ExpiresAt: req.ExpiresAt.UTC().Truncate(time.Second)}
	spec := map[string]any{}
	switch t.Controller {
	case breakglass.ArgoCD:
		auto, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "syncPolicy", "automated")
		if !found || auto == nil {
			return nil, exitcode.Refuse(breakglass.RuleController, "%s has no spec.syncPolicy.automated: it does not sync by itself, nothing to pause", t)
		}
		if rec.Restore, err = json.Marshal(auto); err != nil {
			return nil, fmt.Errorf("%s spec.syncPolicy.automated: %w", t, err)
		}
		rec.SourceRevision, _, _ = unstructured.NestedString(u.Object, "status", "sync", "revision")
		spec["syncPolicy"] = map[string]any{"automated": nil}
	case breakglass.Flux:
		if s, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend"); s {
			return nil, exitcode.Refuse(breakglass.RuleController, "%s is already suspended (spec.suspend: true): someone paused it outside throughline", t)
		}
		rec.SourceRevision, _, _ = unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "suspend"); found {
			rec.Restore = json.RawMessage("false") // set before: restored as false; absent: removed
		}
		spec["suspend"] = true
	default:
		return nil, fmt.Errorf("controller %q: want %s or %s", t.Controller, breakglass.ArgoCD, breakglass.Flux)
	}
	ids, err := managed(u, t.Controller)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		lo, err := readLive(ctx, c, id)
		if err != nil {
			return nil, err
		}
		rec.Objects = append(rec.Objects, lo)
	}
	patch := map[string]any{
		"metadata": map[string]any{
			"resourceVersion": u.GetResourceVersion(),
			"annotations":     map[string]any{breakglass.AnnotationTicket: req.Ticket, breakglass.AnnotationExpiresAt: rec.ExpiresAt.Format(time.RFC3339)},
		},
		"spec": spec,
	}
	if err := mergePatch(ctx, c, u, patch); err != nil {
		return nil, err
	}
	return rec, nil
}

// Undo reverts a pause that could not be recorded.
func Undo(ctx context.Context, c client.Client, rec *breakglass.Record) error {
	_, err := Restore(ctx, c, rec)
	return err
}

// Restore re-enables reconciliation of the record's object: Argo CD gets
// the automated policy back, Flux spec.suspend false (or absent, as before
// the pause), and the break-glass annotations go. An Argo CD Application
// also gets a refresh request in the same patch: the application
// controller compares "automated sync enabled" with the revision of the
// branch it may have resolved before the write-back was merged, and would
// self-heal the live fix back to that old desired state before syncing the
// write-back; a requested refresh resolves the branch again first. From the object the API
// server answers the patch with, it returns when (now), which field and at
// which resourceVersion reconciliation is on again; an error when it is not
// (Argo CD: spec.syncPolicy.automated absent; Flux: spec.suspend true; or
// the break-glass annotation still there).
func Restore(ctx context.Context, c client.Client, rec *breakglass.Record) (breakglass.Restoration, error) {
	t := breakglass.Target{Controller: rec.Controller, Namespace: rec.Object.Namespace, Name: rec.Object.Name}
	u, err := Get(ctx, c, t)
	if err != nil {
		return breakglass.Restoration{}, err
	}
	spec := map[string]any{}
	annotations := map[string]any{breakglass.AnnotationTicket: nil, breakglass.AnnotationExpiresAt: nil}
	switch rec.Controller {
	case breakglass.ArgoCD:
		annotations[breakglass.AnnotationArgoCDRefresh] = "normal"
		var auto any = map[string]any{}
		if len(rec.Restore) > 0 {
			if err := json.Unmarshal(rec.Restore, &auto); err != nil {
				return breakglass.Restoration{}, fmt.Errorf("%s restore: %w", t, err)
			}
		}
		spec["syncPolicy"] = map[string]any{"automated": auto}
	case breakglass.Flux:
		spec["suspend"] = nil // absent before the pause (or a record from before Restore was kept for breakglass.Flux)
		if len(rec.Restore) > 0 {
			spec["suspend"] = false
		}
	}
	patch := map[string]any{
		"metadata": map[string]any{
			"resourceVersion": u.GetResourceVersion(),
			"annotations":     annotations,
		},
		"spec": spec,
	}
	if err := mergePatch(ctx, c, u, patch); err != nil { // u is now the patched object
		return breakglass.Restoration{}, err
	}
	r := breakglass.Restoration{At: time.Now().UTC().Truncate(time.Second), ResourceVersion: u.GetResourceVersion()}
	switch rec.Controller {
	case breakglass.ArgoCD:
		r.Field = "spec.syncPolicy.automated"
		if auto, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "syncPolicy", "automated"); !found || auto == nil {
			return r, fmt.Errorf("%s: spec.syncPolicy.automated is not set after the resume", t)
		}
	case breakglass.Flux:
		r.Field = "spec.suspend=false"
		if s, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend"); s {
			return r, fmt.Errorf("%s: spec.suspend is still true after the resume", t)
		}
	}
	if _, ok := u.GetAnnotations()[breakglass.AnnotationTicket]; ok {
		return r, fmt.Errorf("%s: annotation %s is still set after the resume", t, breakglass.AnnotationTicket)
	}
	return r, nil
}

func mergePatch(ctx context.Context, c client.Client, u *unstructured.Unstructured, patch map[string]any) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
	if err := c.Patch(ctx, u, client.RawPatch(types.MergePatchType, data), client.FieldOwner(breakglass.FieldManagerThrough)); err != nil {
		if apierrors.IsConflict(err) {
			return &breakglass.ConflictError{Object: name, Err: err}
		}
		return fmt.Errorf("patch %s: %w", name, err)
	}
	return nil
}

// restorers refuses a target that something else would put back: an
// ApplicationSet owner (unless it ignores the app's spec.syncPolicy and
// preserves the break-glass annotations), a parent Argo CD app
// (app-of-apps) or a parent Flux Kustomization.
func restorers(ctx context.Context, c client.Client, u *unstructured.Unstructured, t breakglass.Target) error {
	for _, o := range u.GetOwnerReferences() {
		if o.Kind == breakglass.ApplicationSetKind {
			if err := applicationSetLetsGo(ctx, c, u, o.Name); err != nil {
				return err
			}
			continue
		}
		if t.Controller == breakglass.Flux && o.Kind == "Kustomization" {
			return exitcode.Refuse(breakglass.RuleController,
				"%s is owned by Kustomization %s, which would restore spec.suspend: pause the parent first", t, o.Name)
		}
	}
	labels, annots := u.GetLabels(), u.GetAnnotations()
	switch t.Controller {
	case breakglass.ArgoCD:
		parent := labels[breakglass.ArgoInstanceLabel]
		if parent == "" {
			if id := annots[breakglass.ArgoTrackingIDAnnot]; id != "" {
				parent, _, _ = strings.Cut(id, ":")
			}
		}
		if parent != "" {
			return exitcode.Refuse(breakglass.RuleController,
				"%s is managed by the parent Application %q (app-of-apps: %s / %s), whose next sync restores spec.syncPolicy. "+
					"Pause the parent first (throughline breakglass pause for its app), or ignore /spec/syncPolicy of this child in the parent's ignoreDifferences",
				t, parent, breakglass.ArgoInstanceLabel, breakglass.ArgoTrackingIDAnnot)
		}
	case breakglass.Flux:
		if p := labels[breakglass.FluxParentNameLabel]; p != "" {
			return exitcode.Refuse(breakglass.RuleController,
				"%s is applied by the parent Kustomization %q (label %s), whose next reconcile restores spec.suspend: pause the parent first",
				t, p, breakglass.FluxParentNameLabel)
		}
	}
	return nil
}

// applicationSetLetsGo refuses an Application whose owning ApplicationSet
// would restore its spec.syncPolicy (the controller reconciles the
// Application back to the template within a second) or strip the
// break-glass annotations (it owns the annotations; the expiry monitor reads
// them). It lets go when the ApplicationSet has an
// spec.ignoreApplicationDifferences entry for this app covering
// /spec/syncPolicy and spec.preservedFields.annotations holds both
// annotations: then the controller leaves both alone.
func applicationSetLetsGo(ctx context.Context, c client.Client, app *unstructured.Unstructured, name string) error {
	appName := fmt.Sprintf("Application %s/%s", app.GetNamespace(), app.GetName())
	as := &unstructured.Unstructured{}
	as.SetGroupVersionKind(schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: breakglass.ApplicationSetKind})
	ignores, preserves := false, map[string]bool{}
	err := c.Get(ctx, types.NamespacedName{Namespace: app.GetNamespace(), Name: name}, as)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
	case err != nil:
		return fmt.Errorf("read ApplicationSet %s/%s, owner of %s: %w", app.GetNamespace(), name, appName, err)
	default:
		entries, _, _ := unstructured.NestedSlice(as.Object, "spec", "ignoreApplicationDifferences")
		for _, e := range entries {
			m, _ := e.(map[string]any)
			if n, _ := m["name"].(string); n != "" && n != app.GetName() {
				continue
			}
			ptrs, _, _ := unstructured.NestedStringSlice(m, "jsonPointers")
			jqs, _, _ := unstructured.NestedStringSlice(m, "jqPathExpressions")
			for _, p := range ptrs {
				ignores = ignores || p == "/spec" || p == "/spec/syncPolicy" || p == "/spec/syncPolicy/automated"
			}
			for _, q := range jqs {
				ignores = ignores || q == ".spec" || q == ".spec.syncPolicy" || q == ".spec.syncPolicy.automated"
			}
		}
		kept, _, _ := unstructured.NestedStringSlice(as.Object, "spec", "preservedFields", "annotations")
		for _, a := range kept {
			preserves[a] = true
		}
	}
	if ignores && preserves[breakglass.AnnotationTicket] && preserves[breakglass.AnnotationExpiresAt] {
		return nil
	}
	return exitcode.Refuse(breakglass.RuleController,
		"%s is owned by ApplicationSet %s: the ApplicationSet controller would restore spec.syncPolicy within seconds "+
			"(and strip the break-glass annotations). Pause it through the ApplicationSet: add to ApplicationSet %s/%s\n"+
			"  spec:\n    ignoreApplicationDifferences:\n      - name: %s\n        jsonPointers: [/spec/syncPolicy]\n"+
			"    preservedFields:\n      annotations: [%s, %s]\n"+
			"then pause again (found: ignores /spec/syncPolicy: %t; preserves %s: %t, %s: %t)",
		appName, name, app.GetNamespace(), name, app.GetName(), breakglass.AnnotationTicket, breakglass.AnnotationExpiresAt,
		ignores, breakglass.AnnotationTicket, preserves[breakglass.AnnotationTicket], breakglass.AnnotationExpiresAt,
		preserves[breakglass.AnnotationExpiresAt])
}

type objectID struct {
	group, version, kind, namespace, name string
}

// managed lists the objects the controller says it manages: Argo CD
// status.resources, Flux status.inventory.entries.
func managed(u *unstructured.Unstructured, ctl breakglass.Controller) ([]objectID, error) {
	var out []objectID
	switch ctl {
	case breakglass.ArgoCD:
		rs, _, _ := unstructured.NestedSlice(u.Object, "status", "resources")
		for _, r := range rs {
			m, ok := r.(map[string]any)
			if !ok {
				continue
			}
			s := func(k string) string { v, _ := m[k].(string); return v }
			out = append(out, objectID{s("group"), s("version"), s("kind"), s("namespace"), s("name")})
		}
	case breakglass.Flux:
		es, _, _ := unstructured.NestedSlice(u.Object, "status", "inventory", "entries")
		for _, e := range es {
			m, ok := e.(map[string]any)
			if !ok {
				continue
			}
			id, _ := m["id"].(string)
			v, _ := m["v"].(string)
			// <namespace>_<name>_<group>_<kind>
			parts := strings.Split(id, "_")
			if len(parts) != 4 {
				return nil, fmt.Errorf("%s/%s status.inventory entry %q: want namespace_name_group_kind", u.GetNamespace(), u.GetName(), id)
			}
			out = append(out, objectID{parts[2], v, parts[3], parts[0], parts[1]})
		}
	}
	return out, nil
}

// Tracked lists the objects the controller tracks for the record's
// application: those it names now (Argo CD status.resources, Flux
// status.inventory) and those recorded at the pause, each once.
func Tracked(ctx context.Context, c client.Client, rec *breakglass.Record) ([]render.ID, error) {
	t := breakglass.Target{Controller: rec.Controller, Namespace: rec.Object.Namespace, Name: rec.Object.Name}
	u, err := Get(ctx, c, t)
	if err != nil {
		return nil, err
	}
	ids, err := managed(u, t.Controller)
	if err != nil {
		return nil, err
	}
	seen := map[render.ID]bool{}
	var out []render.ID
	add := func(id render.ID) {
		if k := breakglass.Key(id); !seen[k] {
			seen[k] = true
			out = append(out, id)
		}
	}
	for _, id := range ids {
		add(render.ID{Group: id.group, Version: id.version, Kind: id.kind, Namespace: id.namespace, Name: id.name})
	}
	for _, o := range rec.Objects {
		gv, err := schema.ParseGroupVersion(o.APIVersion)
		if err != nil {
			return nil, fmt.Errorf("%s: object %s %s/%s apiVersion: %w", breakglass.Path(rec.Environment, rec.App), o.Kind, o.Namespace, o.Name, err)
		}
		add(render.ID{Group: gv.Group, Version: gv.Version, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name})
	}
	return out, nil
}

func readLive(ctx context.Context, c client.Client, id objectID) (breakglass.LiveObject, error) {
	gvk := schema.GroupVersionKind{Group: id.group, Version: id.version, Kind: id.kind}
	lo := breakglass.LiveObject{APIVersion: gvk.GroupVersion().String(), Kind: id.kind, Namespace: id.namespace, Name: id.name}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := c.Get(ctx, types.NamespacedName{Namespace: id.namespace, Name: id.name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return lo, nil
		}
		return lo, fmt.Errorf("read live %s %s/%s: %w", gvk.Kind, id.namespace, id.name, err)
	}
	lo.ResourceVersion = u.GetResourceVersion()
	lo.ManagedFields = u.GetManagedFields()
	return lo, nil
}

// Flapping watches the record's live objects for d after a resume, reading
// them every interval, and returns those whose metadata.generation moved
// more than once (written back and forth), with the managers that wrote
// them, "Kind namespace/name: N writes by a, b".
func Flapping(ctx context.Context, c client.Client, rec *breakglass.Record, d, interval time.Duration) ([]string, error) {
	if d <= 0 {
		return nil, nil
	}
	if interval <= 0 {
		interval = time.Second
	}
	type seen struct {
		gen      int64
		moves    int
		managers map[string]bool
	}
	state := map[int]*seen{}
	read := func() error {
		for i, o := range rec.Objects {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(o.APIVersion)
			u.SetKind(o.Kind)
			if err := c.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: o.Name}, u); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return fmt.Errorf("read live %s %s/%s: %w", o.Kind, o.Namespace, o.Name, err)
			}
			s, ok := state[i]
			if !ok {
				state[i] = &seen{gen: u.GetGeneration(), managers: map[string]bool{}}
				continue
			}
			if u.GetGeneration() != s.gen {
				s.gen = u.GetGeneration()
				s.moves++
				latest, at := "", time.Time{}
				for _, mf := range u.GetManagedFields() {
					if mf.Time != nil && mf.Subresource == "" && !mf.Time.Time.Before(at) {
						latest, at = mf.Manager, mf.Time.Time
					}
				}
				if latest != "" {
					s.managers[latest] = true
				}
			}
		}
		return nil
	}
	if err := read(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(d)
	t := time.NewTicker(interval)
	defer t.Stop()
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
		if err := read(); err != nil {
			return nil, err
		}
	}
	var out []string
	for i, o := range rec.Objects {
		s := state[i]
		if s == nil || s.moves < 2 {
			continue
		}
		var ms []string
		for m := range s.managers {
			ms = append(ms, m)
		}
		sort.Strings(ms)
		out = append(out, fmt.Sprintf("%s %s/%s: %d writes in %s by %s", o.Kind, o.Namespace, o.Name, s.moves, d, strings.Join(ms, ", ")))
	}
	return out, nil
}
