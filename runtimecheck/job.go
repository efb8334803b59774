package runtimecheck

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// Labels on the smoke-test Jobs.
const (
	LabelAcceptance = v1alpha1.Group + "/acceptance"
	LabelCheck      = v1alpha1.Group + "/check"
	LabelGeneration = v1alpha1.Group + "/generation"
)

// DefaultJobDeadline is a Job check's deadline when none is declared.
const DefaultJobDeadline = 5 * time.Minute

// Owner is the Acceptance a check belongs to.
type Owner struct {
	Namespace, Name string
	UID             types.UID
	Generation      int64
	// ProbeNamespaces are the namespaces besides its own an HTTP check of
	// the Acceptance may probe: those the committed environment registry
	// binds to its app, set by the verifier only after it found the live
	// checks equal to the committed ones (none: its own namespace only).
	ProbeNamespaces []string
}

// Jobs runs smoke tests as Kubernetes Jobs, one per Acceptance generation
// and check: the Job is created once and read at each later evaluation.
type Jobs struct {
	Client client.Client
}

// JobName is the deterministic name of the Job of a check for an
// Acceptance's generation (at most 63 characters, so that it is a valid
// label value too).
func JobName(acceptance string, generation int64, check string) string {
	name := fmt.Sprintf("%s-%d-%s", acceptance, generation, check)
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:54], "-.") + "-" + hex.EncodeToString(sum[:])[:8]
}

// Evaluate creates the check's Job if it does not exist, else reads it:
// Passed once it completed, Failed once it failed (its deadline passed,
// its Pod failed), Pending while it runs. A Job of that name that the
// Acceptance does not own is never trusted.
func (j *Jobs) Evaluate(ctx context.Context, o Owner, check string, c *v1alpha1.JobCheck) Result {
	name := JobName(o.Name, o.Generation, check)
	what := "Job " + o.Namespace + "/" + name
	var job batchv1.Job
	err := j.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: name}, &job)
	if apierrors.IsNotFound(err) {
		return j.create(ctx, o, name, check, c)
	}
	if err != nil {
		return unverifiable(fmt.Sprintf("reading %s: %v", what, err))
	}
	if !ownedBy(&job, o.UID) {
		return unverifiable(what + " exists but was not created by throughline for this Acceptance; delete it")
	}
	for _, cond := range job.Status.Conditions {
		if cond.Status != corev1.ConditionTrue {
			continue
		}
		switch cond.Type {
		case batchv1.JobComplete:
			r := passed("Job complete", what+" completed")
			r.Final = true
			return r
		case batchv1.JobFailed:
			r := failed("Job failed", fmt.Sprintf("%s failed: %s %s", what, cond.Reason, cond.Message))
			r.Final = true
			return r
		}
	}
	return pending(fmt.Sprintf("%s running (%d active)", what, job.Status.Active))
}

func ownedBy(job *batchv1.Job, uid types.UID) bool {
	for _, ref := range job.OwnerReferences {
		if ref.UID == uid && ref.Kind == v1alpha1.AcceptanceKind && ptr.Deref(ref.Controller, false) {
			return true
		}
	}
	return false
}

func (j *Jobs) create(ctx context.Context, o Owner, name, check string, c *v1alpha1.JobCheck) Result {
	deadline := c.Deadline.Duration
	if deadline <= 0 {
		deadline = DefaultJobDeadline
	}
	labels := map[string]string{
		LabelAcceptance: truncLabel(o.Name), LabelCheck: truncLabel(check), LabelGeneration: strconv.FormatInt(o.Generation, 10),
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: o.Namespace, Name: name, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.AcceptanceKind, Name: o.Name, UID: o.UID, Controller: ptr.To(true),
			}},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To(int32(0)),
			ActiveDeadlineSeconds: ptr.To(int64(deadline.Round(time.Second) / time.Second)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:      corev1.RestartPolicyNever,
					ServiceAccountName: c.ServiceAccountName,
					Containers:         []corev1.Container{{Name: "check", Image: c.Image, Command: c.Command, Args: c.Args}},
				},
			},
		},
	}
	if err := j.Client.Create(ctx, job); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return pending(fmt.Sprintf("Job %s/%s created", o.Namespace, name))
		}
		return unverifiable(fmt.Sprintf("creating Job %s/%s: %v", o.Namespace, name, err))
	}
	j.deleteOlder(ctx, o)
	return pending(fmt.Sprintf("Job %s/%s created (deadline %s)", o.Namespace, name, deadline))
}

// deleteOlder deletes the Jobs of the Acceptance's earlier generations (best
// effort: the garbage collector deletes them with the Acceptance anyway).
func (j *Jobs) deleteOlder(ctx context.Context, o Owner) {
	var list batchv1.JobList
	if err := j.Client.List(ctx, &list, client.InNamespace(o.Namespace), client.MatchingLabels{LabelAcceptance: truncLabel(o.Name)}); err != nil {
		return
	}
	for i := range list.Items {
		job := &list.Items[i]
		if job.Labels[LabelGeneration] == strconv.FormatInt(o.Generation, 10) || !ownedBy(job, o.UID) {
			continue
		}
		_ = j.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))
	}
}

func truncLabel(s string) string {
	if len(s) > 63 {
		return strings.TrimRight(s[:63], "-_.")
	}
	return s
}
