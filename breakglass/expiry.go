package breakglass

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReasonPauseExpired is the reason of the Warning Event on a paused
// Application or Kustomization whose pause outlived its expiry.
const ReasonPauseExpired = "BreakglassPauseExpired"

// ExpiryMonitor finds pauses that outlived their expiry, from the
// annotations pause puts on the Application / Kustomization, sets the gauge
// throughline_breakglass_pause_expired{kind,namespace,name} (1 expired, 0
// not) and posts one Warning Event per object and expiry. It is a
// controller-runtime Runnable (Start) for throughline serve.
type ExpiryMonitor struct {
	Client   client.Client
	Interval time.Duration // default 1m
	Now      func() time.Time
	Gauge    *prometheus.GaugeVec
	// OnError, when set, gets the errors of a periodic check (Start goes on).
	OnError func(error)

	reported map[string]bool
}

// NewExpiryGauge returns the gauge to register (e.g. with
// controller-runtime's metrics.Registry).
func NewExpiryGauge() *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "throughline_breakglass_pause_expired",
		Help: "1 when a break-glass pause of this Application/Kustomization outlived its expiry, else 0.",
	}, []string{"kind", "namespace", "name"})
}

// Start checks every Interval until ctx ends.
func (m *ExpiryMonitor) Start(ctx context.Context) error {
	iv := m.Interval
	if iv <= 0 {
		iv = time.Minute
	}
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		if _, err := m.Check(ctx); err != nil && ctx.Err() == nil && m.OnError != nil {
			m.OnError(err) // transient: tried again at the next tick
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Check lists the paused objects once and returns those whose pause expired
// ("Kind namespace/name").
func (m *ExpiryMonitor) Check(ctx context.Context) ([]string, error) {
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	if m.reported == nil {
		m.reported = map[string]bool{}
	}
	var expired []string
	var errs []error
	for _, gvk := range []struct{ group, version, kind string }{
		{ApplicationGVK.Group, ApplicationGVK.Version, ApplicationGVK.Kind},
		{KustomizationGVK.Group, KustomizationGVK.Version, KustomizationGVK.Kind},
	} {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(gvk.group + "/" + gvk.version)
		list.SetKind(gvk.kind + "List")
		if err := m.Client.List(ctx, list); err != nil {
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				continue // that controller is not installed
			}
			errs = append(errs, fmt.Errorf("list %s: %w", gvk.kind, err))
			continue
		}
		for i := range list.Items {
			u := &list.Items[i]
			at, ok := u.GetAnnotations()[AnnotationExpiresAt]
			if !ok {
				continue
			}
			exp, err := time.Parse(time.RFC3339, at)
			if err != nil {
				continue
			}
			name := fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
			is := now().After(exp)
			if m.Gauge != nil {
				v := 0.0
				if is {
					v = 1
				}
				m.Gauge.WithLabelValues(u.GetKind(), u.GetNamespace(), u.GetName()).Set(v)
			}
			if !is {
				continue
			}
			expired = append(expired, name)
			key := name + "@" + at
			if m.reported[key] {
				continue
			}
			if err := m.event(ctx, u, exp, now()); err != nil {
				errs = append(errs, err)
				continue
			}
			m.reported[key] = true
		}
	}
	return expired, errors.Join(errs...)
}

func (m *ExpiryMonitor) event(ctx context.Context, u *unstructured.Unstructured, exp, now time.Time) error {
	ticket := u.GetAnnotations()[AnnotationTicket]
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: u.GetName() + ".breakglass-", Namespace: u.GetNamespace()},
		InvolvedObject: corev1.ObjectReference{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(),
			Name: u.GetName(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion()},
		Reason: ReasonPauseExpired,
		Message: fmt.Sprintf("break-glass pause (ticket %s) expired at %s, %s ago: write back and resume (throughline breakglass writeback / resume)",
			ticket, exp.Format(time.RFC3339), now.Sub(exp).Round(time.Second)),
		Type:           corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "throughline"},
		FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now), Count: 1,
	}
	if err := m.Client.Create(ctx, ev); err != nil {
		return fmt.Errorf("event on %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return nil
}
