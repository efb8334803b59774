package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KubeletOptions configures [StartKubelet].
type KubeletOptions struct {
	// Namespaces are where the kubelet runs Pods (required).
	Namespaces []string
	// Node is the Node the Pods are bound to and run on (default "node-1").
	// It is created when missing, with NodeLabels.
	Node string
	// NodeLabels label a Node the kubelet creates (default
	// kubernetes.io/os=linux, kubernetes.io/arch=amd64: the verifier reads a
	// Node's platform from them).
	NodeLabels map[string]string
	// ImageID is the imageID the container runtime reports for a
	// container's image (default [DockerPullableImageID]). A multi-arch test
	// returns the digest of the platform's manifest, as a real runtime does.
	ImageID func(image string) string
}

// Kubelet is a PLAYED kubelet (and scheduler): no kubelet can run in this
// harness, which has no container runtime. While it runs, it polls the Pods
// of its namespaces and does what the scheduler and a kubelet would do to
// them, through the API server:
//
//   - binds a Pod without spec.nodeName to its Node (the pods/binding
//     subresource, as kube-scheduler does): the verifier ignores unscheduled
//     Pods, and the Node's labels are the Pod's platform;
//   - "starts" a bound Pod: status Running, hostIP, podIP, startTime, the
//     conditions PodReadyToStartContainers, Initialized, ContainersReady and
//     Ready (true), init containers Completed, every container Ready,
//     Started and Running with the imageID of KubeletOptions.ImageID;
//   - finishes a graceful deletion (a bound Pod with a deletionTimestamp is
//     deleted with grace period 0, as the kubelet does once its containers
//     stopped).
//
// Nothing runs: no image is pulled, no container started, no probe run. The
// real deployment and replicaset controllers ([StartControllerManager]) count
// its Pods ready and available from those conditions.
type Kubelet struct {
	t      testing.TB
	c      client.Client
	opts   KubeletOptions
	cancel context.CancelFunc
	done   chan struct{}
	stop   sync.Once
	nextIP int
	lastEr string
}

// DockerPullableImageID is the imageID a Docker-era kubelet reports for an
// image pinned by digest: for repo[:tag]@sha256:... it is
// docker-pullable://repo@sha256:...; an image without a digest has none ("").
func DockerPullableImageID(image string) string {
	name, digest, ok := strings.Cut(image, "@")
	if !ok {
		return ""
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i] // the tag
	}
	return "docker-pullable://" + name + "@" + digest
}

// StartKubelet creates the Node of opts when missing and starts the played
// kubelet (see [Kubelet]) on the Pods of opts.Namespaces until ctx ends, Stop
// is called or the test ends.
func StartKubelet(ctx context.Context, t testing.TB, c client.Client, opts KubeletOptions) *Kubelet {
	t.Helper()
	if len(opts.Namespaces) == 0 {
		t.Fatalf("played kubelet: no namespace")
	}
	if opts.Node == "" {
		opts.Node = "node-1"
	}
	if opts.NodeLabels == nil {
		opts.NodeLabels = map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}
	}
	if opts.ImageID == nil {
		opts.ImageID = DockerPullableImageID
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: opts.Node, Labels: opts.NodeLabels}}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, node)); err != nil {
		t.Fatalf("played kubelet: create Node %s: %v", opts.Node, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	k := &Kubelet{t: t, c: c, opts: opts, cancel: cancel, done: make(chan struct{})}
	go k.loop(ctx)
	t.Cleanup(k.Stop)
	return k
}

// Stop stops the kubelet and waits until its loop ended. Pods it did not
// start yet stay Pending, like on a node whose image pulls hang.
func (k *Kubelet) Stop() {
	k.stop.Do(func() {
		k.cancel()
		<-k.done
	})
}

func (k *Kubelet) loop(ctx context.Context) {
	defer close(k.done)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, ns := range k.opts.Namespaces {
			if err := k.sync(ctx, ns); err != nil && ctx.Err() == nil && err.Error() != k.lastEr {
				k.lastEr = err.Error() // log each distinct error once; the next round retries
				k.t.Logf("played kubelet: %v", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sync does one round over the Pods of ns.
func (k *Kubelet) sync(ctx context.Context, ns string) error {
	pods := &corev1.PodList{}
	if err := k.c.List(ctx, pods, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("list Pods in %s: %w", ns, err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		var err error
		switch {
		case p.DeletionTimestamp != nil:
			if p.Spec.NodeName == k.opts.Node {
				err = k.c.Delete(ctx, p, client.GracePeriodSeconds(0), client.Preconditions{UID: &p.UID})
				err = ignoreGone(err)
			}
		case p.Spec.NodeName == "":
			b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
				Target: corev1.ObjectReference{Kind: "Node", Name: k.opts.Node}}
			err = ignoreGone(k.c.SubResource("binding").Create(ctx, p, b))
			if err != nil {
				err = fmt.Errorf("bind Pod %s/%s to Node %s: %w", p.Namespace, p.Name, k.opts.Node, err)
			}
		case p.Spec.NodeName == k.opts.Node && p.Status.Phase != corev1.PodRunning:
			k.run(p)
			err = ignoreGone(k.c.Status().Update(ctx, p))
			if err != nil {
				err = fmt.Errorf("update status of Pod %s/%s: %w", p.Namespace, p.Name, err)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ignoreGone ignores what a later round settles: the Pod is gone, or changed
// since it was listed.
func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// run writes the status of a running Pod into p.
func (k *Kubelet) run(p *corev1.Pod) {
	now := metav1.Now()
	k.nextIP++
	hostIP, podIP := "192.0.2.1", fmt.Sprintf("10.244.%d.%d", k.nextIP/250, 1+k.nextIP%250)
	p.Status.Phase = corev1.PodRunning
	p.Status.HostIP, p.Status.HostIPs = hostIP, []corev1.HostIP{{IP: hostIP}}
	p.Status.PodIP, p.Status.PodIPs = podIP, []corev1.PodIP{{IP: podIP}}
	p.Status.StartTime = &now
	for _, t := range []corev1.PodConditionType{
		corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady,
	} {
		setPodCondition(p, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	p.Status.InitContainerStatuses = nil
	for _, c := range p.Spec.InitContainers {
		s := k.containerStatus(p, c)
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			// A plain init container ran to completion; a sidecar keeps running.
			s.Started = new(false)
			s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now, ContainerID: s.ContainerID}}
		}
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, s)
	}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, k.containerStatus(p, c))
	}
}

// containerStatus is the status of a running, ready container.
func (k *Kubelet) containerStatus(p *corev1.Pod, c corev1.Container) corev1.ContainerStatus {
	id := sha256.Sum256([]byte(string(p.UID) + "/" + c.Name))
	return corev1.ContainerStatus{
		Name: c.Name, Image: c.Image, ImageID: k.opts.ImageID(c.Image),
		ContainerID: "containerd://" + hex.EncodeToString(id[:]), // played: no container exists
		Ready:       true, Started: new(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
	}
}

func setPodCondition(p *corev1.Pod, c corev1.PodCondition) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == c.Type {
			p.Status.Conditions[i] = c
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, c)
}

// WaitRolledOut waits (up to d) until the deployment controller finished
// rolling out the current template of Deployment ns/name: status observed
// at its generation, spec.replicas Pods updated, ready and available, no
// old Pod left (none terminating either). It returns the Deployment and its
// Pods; the error says how far the rollout got.
func WaitRolledOut(ctx context.Context, c client.Client, ns, name string, d time.Duration) (*appsv1.Deployment, []corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		dep, pods, why, err := rolledOut(ctx, c, ns, name)
		if err == nil && why == "" {
			return dep, pods, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = errors.New(why)
			}
			return dep, pods, fmt.Errorf("rollout of Deployment %s/%s not complete after %s: %w", ns, name, d, err)
		case <-tick.C:
		}
	}
}

// rolledOut reads the Deployment and its Pods; why says what is missing
// ("" when the rollout is complete).
func rolledOut(ctx context.Context, c client.Client, ns, name string) (*appsv1.Deployment, []corev1.Pod, string, error) {
	dep := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep); err != nil {
		return nil, nil, "", fmt.Errorf("read Deployment %s/%s: %w", ns, name, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil {
		return dep, nil, "", fmt.Errorf("selector of Deployment %s/%s: %w", ns, name, err)
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return dep, nil, "", fmt.Errorf("list Pods of Deployment %s/%s: %w", ns, name, err)
	}
	n, st := int32(1), dep.Status
	if dep.Spec.Replicas != nil {
		n = *dep.Spec.Replicas
	}
	why := ""
	switch {
	case st.ObservedGeneration < dep.Generation:
		why = fmt.Sprintf("status observed generation %d, want %d", st.ObservedGeneration, dep.Generation)
	case st.UpdatedReplicas != n || st.Replicas != n || st.ReadyReplicas != n || st.AvailableReplicas != n:
		why = fmt.Sprintf("replicas %d: %d updated, %d total, %d ready, %d available", n, st.UpdatedReplicas, st.Replicas,
			st.ReadyReplicas, st.AvailableReplicas)
	case len(pods.Items) != int(n) || terminating(pods.Items) > 0:
		why = fmt.Sprintf("%d Pods (%d terminating), want %d", len(pods.Items), terminating(pods.Items), n)
	}
	return dep, pods.Items, why, nil
}

func terminating(pods []corev1.Pod) int {
	n := 0
	for i := range pods {
		if pods[i].DeletionTimestamp != nil {
			n++
		}
	}
	return n
}
