package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/imageid"
	"github.com/throughline-dev/throughline/registry"
)

// RolloutGVK is Argo Rollouts' Rollout, read as unstructured.
var RolloutGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}

// Resolver resolves a declared image (a digest reference) to what it names;
// *registry.Client is one.
type Resolver interface {
	Resolve(ctx context.Context, ref string) (*registry.Descriptor, error)
}

// Verifier compares the Pods of the workloads an Acceptance names with its
// declared digests. It is safe for concurrent use. Resolved digests are kept
// for the life of the Verifier (a digest names its content), so a second
// pass over the same digests asks the registry nothing.
type Verifier struct {
	// Client reads workloads, ReplicaSets, ControllerRevisions, Pods and Nodes
	// (a cached client in the controller).
	Client client.Reader
	// Uncached reads kinds that may not be installed (Argo Rollouts); nil
	// means Client.
	Uncached client.Reader
	// Registry resolves declared digests; nil verifies exact matches only
	// (everything else is Unverifiable).
	Registry Resolver

	mu       sync.Mutex
	resolved map[string]*registry.Descriptor
}

// Report is the verdict on one Acceptance.
type Report struct {
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Generation int64  `json:"generation"`
	// App and Environment are the Acceptance's labels (what the records
	// and the spans call them).
	App          string           `json:"app,omitempty"`
	Environment  string           `json:"environment,omitempty"`
	RenderedHash string           `json:"renderedHash,omitempty"`
	Outcome      Outcome          `json:"outcome"`
	Reason       string           `json:"reason"`
	Message      string           `json:"message"`
	Workloads    []WorkloadReport `json:"workloads,omitempty"`
	// CheckPhase: the images are verified and the verdict is the runtime
	// checks' (Soaking and an Unverifiable check leave Ready Unknown).
	CheckPhase bool `json:"checkPhase,omitempty"`
	// SoakStartedAt and Checks are the runtime checks' state (status).
	SoakStartedAt *metav1.Time           `json:"soakStartedAt,omitempty"`
	Checks        []v1alpha1.CheckStatus `json:"checks,omitempty"`
}

// WorkloadReport is the verdict on one workload.
type WorkloadReport struct {
	APIVersion string  `json:"apiVersion,omitempty"`
	Kind       string  `json:"kind"`
	Namespace  string  `json:"namespace"`
	Name       string  `json:"name"`
	Outcome    Outcome `json:"outcome"`
	Found      bool    `json:"found"`
	Complete   bool    `json:"rolloutComplete"`
	Revision   string  `json:"revision,omitempty"`
	Pods       int     `json:"pods"`
	Message    string  `json:"message,omitempty"`
	// SpecOnly: the workload was checked by its live object (the images it
	// declares), its Pods not compared (a CronJob).
	SpecOnly   bool              `json:"specOnly,omitempty"`
	Containers []ContainerReport `json:"containers,omitempty"`
}

// ContainerReport is the verdict on one declared container over every Pod
// of the current revision.
type ContainerReport struct {
	Name     string                   `json:"name"`
	Init     bool                     `json:"init,omitempty"`
	Image    string                   `json:"image"`
	Digest   string                   `json:"digest,omitempty"`
	Outcome  Outcome                  `json:"outcome"`
	Skipped  string                   `json:"skipped,omitempty"`
	Observed []v1alpha1.ObservedImage `json:"observed,omitempty"`
}

// InvalidError is an Acceptance that cannot be verified as written.
type InvalidError struct {
	Name string
	Err  error
}

func (e *InvalidError) Error() string { return fmt.Sprintf("Acceptance %s: %v", e.Name, e.Err) }
func (e *InvalidError) Unwrap() error { return e.Err }

// DecodeSpec reads and checks an Acceptance's spec. A workload named in
// another namespace than the Acceptance's own is invalid: whoever can
// create an Acceptance in one namespace must not be able to vouch for the
// workloads of another (and a Flux targetNamespace that moved the
// Acceptance, not the workloads it names, must not verify someone else's).
func DecodeSpec(u *unstructured.Unstructured) (v1alpha1.AcceptanceSpec, error) {
	var spec v1alpha1.AcceptanceSpec
	name := u.GetNamespace() + "/" + u.GetName()
	m, ok := u.Object["spec"].(map[string]any)
	if !ok {
		return spec, &InvalidError{name, errors.New("no spec")}
	}
	if err := checkUnverifiableAfter(m); err != nil {
		return spec, &InvalidError{name, err}
	}
	raw, err := json.Marshal(m)
	if err == nil {
		err = json.Unmarshal(raw, &spec)
	}
	if err != nil {
		return spec, &InvalidError{name, fmt.Errorf("spec: %w", err)}
	}
	var errs []error
	if spec.App == "" {
		errs = append(errs, errors.New("spec.app is empty"))
	}
	if !imageid.ValidDigest(spec.RenderedHash) {
		errs = append(errs, fmt.Errorf("spec.renderedHash %q is not sha256:<64 hex>", spec.RenderedHash))
	}
	for i, w := range spec.Workloads {
		at := fmt.Sprintf("spec.workloads[%d]", i)
		if w.Kind == "" || w.Name == "" {
			errs = append(errs, fmt.Errorf("%s: kind and name are required", at))
		}
		if ns := u.GetNamespace(); w.Namespace != "" && ns != "" && w.Namespace != ns {
			errs = append(errs, fmt.Errorf("%s: %s %s/%s is outside the Acceptance's namespace %s "+
				"(an Acceptance vouches only for the workloads of its own namespace: apply it where they are)", at, w.Kind, w.Namespace, w.Name, ns))
		}
		for j, c := range w.Containers {
			if c.Name == "" {
				errs = append(errs, fmt.Errorf("%s.containers[%d]: name is required", at, j))
			}
			if c.Digest != "" && !imageid.ValidDigest(c.Digest) {
				errs = append(errs, fmt.Errorf("%s.containers[%d] (%s): digest %q is not sha256:<64 hex>", at, j, c.Name, c.Digest))
			}
			if c.Digest != "" && !strings.HasSuffix(c.Image, "@"+c.Digest) {
				errs = append(errs, fmt.Errorf("%s.containers[%d] (%s): image %q does not carry the digest %s", at, j, c.Name, c.Image, c.Digest))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return spec, &InvalidError{name, err}
	}
	return spec, nil
}

// Verify checks an Acceptance once. An Acceptance that cannot be verified
// as written is a Report with reason Invalid; a workload that does not exist
// is reason WorkloadNotFound. The error is for failures to read the cluster
// (try again).
func (v *Verifier) Verify(ctx context.Context, acc *unstructured.Unstructured) (*Report, error) {
	rep := &Report{Namespace: acc.GetNamespace(), Name: acc.GetName(), Generation: acc.GetGeneration(),
		App: acc.GetLabels()[v1alpha1.LabelApp], Environment: acc.GetLabels()[v1alpha1.LabelEnvironment]}
	rep.RenderedHash, _, _ = unstructured.NestedString(acc.Object, "spec", "renderedHash")
	spec, err := DecodeSpec(acc)
	if err != nil {
		rep.Outcome, rep.Reason, rep.Message = Mismatch, v1alpha1.ReasonInvalid, err.Error()
		return rep, nil
	}
	nodes := map[string]nodePlatform{}
	outcome := Verified
	var notFound, pending, unverifiable, mismatched []string
	for _, w := range spec.Workloads {
		ns := w.Namespace
		if ns == "" {
			ns = acc.GetNamespace()
		}
		wr, err := v.verifyWorkload(ctx, ns, w, nodes)
		if err != nil {
			return nil, fmt.Errorf("verifying Acceptance %s/%s: %w", acc.GetNamespace(), acc.GetName(), err)
		}
		rep.Workloads = append(rep.Workloads, wr)
		id := wr.Kind + " " + wr.Namespace + "/" + wr.Name
		switch {
		case !wr.Found:
			notFound = append(notFound, id)
			outcome = Worse(outcome, Pending)
			continue
		case wr.Outcome == Pending:
			pending = append(pending, id+": "+wr.Message)
		case wr.Outcome == Unverifiable:
			unverifiable = append(unverifiable, id+": "+wr.Message)
		case wr.Outcome == Mismatch:
			mismatched = append(mismatched, id+": "+wr.Message)
		}
		outcome = Worse(outcome, wr.Outcome)
	}
	rep.Outcome = outcome
	switch {
	case outcome == Mismatch:
		rep.Reason, rep.Message = v1alpha1.ReasonImageMismatch, strings.Join(mismatched, "; ")
	case outcome == Unverifiable:
		rep.Reason, rep.Message = v1alpha1.ReasonUnverifiable, strings.Join(unverifiable, "; ")
	case len(notFound) > 0:
		rep.Reason, rep.Message = v1alpha1.ReasonWorkloadNotFound, "not found: "+strings.Join(notFound, ", ")
	case outcome == Pending:
		rep.Reason, rep.Message = v1alpha1.ReasonRolloutInProgress, strings.Join(pending, "; ")
	default:
		rep.Reason, rep.Message = v1alpha1.ReasonVerified, verifiedMessage(rep.Workloads)
	}
	return rep, nil
}

// verifiedMessage sums up verified workloads: those whose Pods run the
// declared images, and apart those checked by their live object only.
func verifiedMessage(ws []WorkloadReport) string {
	n, pods := 0, 0
	var spec []string
	for _, w := range ws {
		if w.SpecOnly {
			spec = append(spec, w.Kind+" "+w.Namespace+"/"+w.Name)
			continue
		}
		n++
		pods += w.Pods
	}
	msg := fmt.Sprintf("%d workloads, %d Pods run the declared images", n, pods)
	if len(spec) > 0 {
		msg += fmt.Sprintf("; %d checked by its live object only, Pods not compared (%s)", len(spec), strings.Join(spec, ", "))
	}
	return msg
}

// declaredInit reports whether a declared container is an init container.
func declaredInit(c v1alpha1.Container) bool {
	return strings.Contains(c.Path, "initContainers")
}

func (v *Verifier) verifyWorkload(ctx context.Context, ns string, w v1alpha1.Workload, nodes map[string]nodePlatform) (WorkloadReport, error) {
	wr := WorkloadReport{APIVersion: w.APIVersion, Kind: w.Kind, Namespace: ns, Name: w.Name, Outcome: Pending}
	rev, found, skip, err := v.revision(ctx, ns, w)
	if err != nil {
		return wr, err
	}
	if skip != "" {
		return v.verifySpec(ctx, ns, w, skip)
	}
	if !found {
		wr.Message = "not found"
		return wr, nil
	}
	wr.Found, wr.Revision = true, rev.Value
	if rev.Selector == nil {
		wr.Message = rev.Message
		return wr, nil
	}
	var pods corev1.PodList
	if err := v.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: rev.Selector}); err != nil {
		return wr, fmt.Errorf("listing Pods of %s %s/%s: %w", w.Kind, ns, w.Name, err)
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	pr := SelectPods(rev, pods.Items)
	wr.Complete, wr.Pods = pr.Complete, len(pr.Current)
	outcome := Verified
	if !pr.Complete {
		outcome = Pending
	}
	var msgs []string
	if pr.Message != "" {
		msgs = append(msgs, pr.Message)
	}
	for _, c := range w.Containers {
		cr, err := v.verifyContainer(ctx, c, pr.Current, nodes)
		if err != nil {
			return wr, err
		}
		outcome = Worse(outcome, cr.Outcome)
		if cr.Outcome != Verified {
			for _, o := range cr.Observed {
				if o.Outcome == cr.Outcome && o.Message != "" {
					msgs = append(msgs, fmt.Sprintf("container %s (Pod %s): %s", c.Name, o.Pod, o.Message))
					break
				}
			}
		}
		wr.Containers = append(wr.Containers, cr)
	}
	wr.Outcome = outcome
	if outcome == Verified {
		msgs = append(msgs, fmt.Sprintf("%d Pods of revision %s run the declared images", len(pr.Current), orNone(rev.Value)))
	}
	wr.Message = strings.Join(msgs, "; ")
	return wr, nil
}

// revision reads a workload and its rollout state. skip is non-empty for
// kinds whose Pods are not checked live.
func (v *Verifier) revision(ctx context.Context, ns string, w v1alpha1.Workload) (rev Revision, found bool, skip string, err error) {
	key := client.ObjectKey{Namespace: ns, Name: w.Name}
	what := w.Kind + " " + ns + "/" + w.Name
	get := func(r client.Reader, obj client.Object) (bool, error) {
		if err := r.Get(ctx, key, obj); err != nil {
			if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
				return false, nil
			}
			return false, fmt.Errorf("reading %s: %w", what, err)
		}
		return true, nil
	}
	group := w.APIVersion
	if i := strings.IndexByte(group, '/'); i >= 0 {
		group = group[:i]
	} else {
		group = ""
	}
	switch {
	case w.Kind == "Deployment" && group == "apps":
		var d appsv1.Deployment
		if found, err = get(v.Client, &d); !found || err != nil {
			return rev, found, "", err
		}
		// The deployment controller's own query: its selector selects its
		// ReplicaSets (they carry the template's labels).
		var rss appsv1.ReplicaSetList
		if err := v.Client.List(ctx, &rss, client.InNamespace(ns), selectorOption(d.Spec.Selector)); err != nil {
			return rev, true, "", fmt.Errorf("listing ReplicaSets of %s: %w", what, err)
		}
		rev, err = DeploymentRevision(&d, rss.Items)
	case w.Kind == "StatefulSet" && group == "apps":
		var s appsv1.StatefulSet
		if found, err = get(v.Client, &s); !found || err != nil {
			return rev, found, "", err
		}
		rev, err = StatefulSetRevision(&s)
	case w.Kind == "DaemonSet" && group == "apps":
		var ds appsv1.DaemonSet
		if found, err = get(v.Client, &ds); !found || err != nil {
			return rev, found, "", err
		}
		var crs appsv1.ControllerRevisionList
		if err := v.Client.List(ctx, &crs, client.InNamespace(ns), selectorOption(ds.Spec.Selector)); err != nil {
			return rev, true, "", fmt.Errorf("listing ControllerRevisions of %s: %w", what, err)
		}
		rev, err = DaemonSetRevision(&ds, crs.Items)
	case w.Kind == "Job" && group == "batch":
		var j batchv1.Job
		if found, err = get(v.Client, &j); !found || err != nil {
			return rev, found, "", err
		}
		rev, err = JobRevision(&j)
	case w.Kind == "Rollout" && group == RolloutGVK.Group:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(RolloutGVK)
		r := v.Uncached
		if r == nil {
			r = v.Client
		}
		if found, err = get(r, u); !found || err != nil {
			return rev, found, "", err
		}
		rev, err = ArgoRolloutRevision(u)
	default:
		return rev, true, fmt.Sprintf("its Pods are not compared live (%s %s: no rollout to follow; a CronJob's Pods exist only while a Job runs)",
			w.APIVersion, w.Kind), nil
	}
	if err != nil {
		// A workload the verifier cannot read the Pods of: not decided. The
		// report names the workload; its message does not again.
		msg := strings.TrimPrefix(err.Error(), w.Kind+" "+ns+"/"+w.Name)
		return Revision{Selector: nil, Message: strings.TrimLeft(msg, ": ")}, true, "", nil
	}
	return rev, true, "", nil
}

// selectorOption lists what a workload's selector selects (nothing more is
// needed; an invalid or empty selector lists the namespace and lets the
// owner check decide).
func selectorOption(ls *metav1.LabelSelector) client.ListOption {
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil || ls == nil || sel.Empty() {
		return &client.ListOptions{}
	}
	return client.MatchingLabelsSelector{Selector: sel}
}

type nodePlatform struct {
	platform registry.Platform
	ok       bool
}

func (v *Verifier) node(ctx context.Context, name string, cache map[string]nodePlatform) (nodePlatform, error) {
	if np, ok := cache[name]; ok {
		return np, nil
	}
	var n corev1.Node
	if err := v.Client.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
		if apierrors.IsNotFound(err) {
			cache[name] = nodePlatform{}
			return nodePlatform{}, nil
		}
		return nodePlatform{}, fmt.Errorf("reading Node %s: %w", name, err)
	}
	p, ok := NodePlatform(&n)
	np := nodePlatform{platform: p, ok: ok}
	cache[name] = np
	return np, nil
}

// NodePlatform reads a Node's platform from its kubernetes.io/os and
// kubernetes.io/arch labels (the beta labels as a fallback). Nodes carry no
// variant label: linux/arm64 is linux/arm64/v8.
func NodePlatform(n *corev1.Node) (registry.Platform, bool) {
	os, arch := n.Labels[corev1.LabelOSStable], n.Labels[corev1.LabelArchStable]
	if os == "" {
		os = n.Labels["beta.kubernetes.io/os"]
	}
	if arch == "" {
		arch = n.Labels["beta.kubernetes.io/arch"]
	}
	return registry.Platform{OS: os, Architecture: arch}, os != "" && arch != ""
}

func containerStatus(p *corev1.Pod, name string, init bool) (*corev1.ContainerStatus, bool) {
	lists := [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses, p.Status.EphemeralContainerStatuses}
	if init {
		lists[0], lists[1] = lists[1], lists[0]
	}
	for _, l := range lists {
		for i := range l {
			if l[i].Name == name {
				return &l[i], true
			}
		}
	}
	return nil, false
}

func (v *Verifier) verifyContainer(
	ctx context.Context, c v1alpha1.Container, pods []*corev1.Pod, nodes map[string]nodePlatform,
) (ContainerReport, error) {
	cr := ContainerReport{Name: c.Name, Init: declaredInit(c), Image: c.Image, Digest: c.Digest, Outcome: Verified}
	if c.Digest == "" {
		cr.Skipped = "no declared digest (allow-listed exception)"
		return cr, nil
	}
	seen := map[string]int{} // imageID + outcome + platform -> index in Observed
	for _, p := range pods {
		cs, ok := containerStatus(p, c.Name, cr.Init)
		imageID, restarts := "", int32(0)
		if ok {
			imageID, restarts = cs.ImageID, cs.RestartCount
		}
		var m imageid.Match
		switch {
		case !ok:
			m = imageid.Match{Outcome: Pending, Message: "no status for the container yet"}
		case p.Spec.NodeName == "":
			m = imageid.Match{Outcome: Pending, Message: "Pod not scheduled yet"}
		default:
			in := imageid.Input{Declared: c.Digest, ImageID: imageID}
			if imageid.NeedsRegistry(c.Digest, imageID) {
				np, err := v.node(ctx, p.Spec.NodeName, nodes)
				if err != nil {
					return cr, err
				}
				in.Platform, in.HasPlatform = np.platform, np.ok
				in.Resolved, in.ResolveErr = v.resolve(ctx, c.Image, c.Digest)
			}
			m = imageid.Compare(in)
		}
		k := imageID + "\x00" + string(m.Outcome) + "\x00" + m.Platform
		if i, ok := seen[k]; ok {
			cr.Observed[i].Pods++
			if restarts > cr.Observed[i].Restarts {
				cr.Observed[i].Restarts = restarts
			}
			continue
		}
		seen[k] = len(cr.Observed)
		cr.Observed = append(cr.Observed, v1alpha1.ObservedImage{
			ImageID: imageID, Outcome: m.Outcome, Match: m.Kind, Platform: m.Platform, Pods: 1, Pod: p.Name, Restarts: restarts, Message: m.Message,
		})
		cr.Outcome = Worse(cr.Outcome, m.Outcome)
	}
	if len(pods) == 0 {
		cr.Outcome = Pending
	}
	return cr, nil
}

// resolve asks the registry what the declared digest is, once per Verifier.
func (v *Verifier) resolve(ctx context.Context, image, digest string) (*registry.Descriptor, error) {
	ref := image
	if i := strings.LastIndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}
	ref += "@" + digest
	v.mu.Lock()
	d, ok := v.resolved[ref]
	v.mu.Unlock()
	if ok {
		return d, nil
	}
	if v.Registry == nil {
		return nil, errors.New("no registry client configured")
	}
	d, err := v.Registry.Resolve(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("resolving declared %s: %w", ref, err)
	}
	if d.Digest != digest {
		return nil, fmt.Errorf("resolving declared %s: the registry answered %s", ref, d.Digest)
	}
	v.mu.Lock()
	if v.resolved == nil {
		v.resolved = map[string]*registry.Descriptor{}
	}
	v.resolved[ref] = d
	v.mu.Unlock()
	return d, nil
}

func fromUnstructured(m map[string]any, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}
