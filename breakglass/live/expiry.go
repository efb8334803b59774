package live

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

	"github.com/throughline-dev/throughline/breakglass"
)

// ReasonPauseExpired is the reason of the Warning Event on a paused
// Application or Kustomization whose pause outlived its expiry.
const ReasonPauseExpired = "BreakglassPauseExpired"

// ExpiryMonitor finds pauses that outlived their expiry, from the
// annotations pause puts on the Application / Kustomization, sets the gauge
// throughline_breakglass_pause_expired{kind,namespace,name} (1 expired, 0
// not; back to 0 when the pause ends, the series removed when the object
// is gone) and posts one Warning Event per object and expiry, in the
// object's namespace. It is a controller-runtime Runnable (Start) for
// throughline serve.
type ExpiryMonitor struct {
	// Client creates the Events.
	Client client.Client
	// Reader lists the Applications and Kustomizations; nil means Client.
	// serve passes its uncached reader: a list a minute needs no informer
	// (and no watch permission) on every Application of the cluster.
	Reader   client.Reader
	Interval time.Duration // default 1m
	Now      func() time.Time
	Gauge    *prometheus.GaugeVec
	// OnError, when set, gets the errors of a periodic check (Start goes on).
	OnError func(error)

	reported map[string]bool
	series   map[[3]string]bool // kind, namespace, name of the gauge series set
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
		{breakglass.ApplicationGVK.Group, breakglass.ApplicationGVK.Version, breakglass.ApplicationGVK.Kind},
		{breakglass.KustomizationGVK.Group, breakglass.KustomizationGVK.Version, breakglass.KustomizationGVK.Kind},
	} {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(gvk.group + "/" + gvk.version)
		list.SetKind(gvk.kind + "List")
		r := m.Reader
		if r == nil {
			r = m.Client
		}
		if err := r.List(ctx, list); err != nil {
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				m.forget(gvk.kind, nil) // that controller is not installed (any more)
				continue
			}
			errs = append(errs, fmt.Errorf("list %s: %w", gvk.kind, err))
			continue
		}
		listed := map[[3]string]bool{}
		for i := range list.Items {
			u := &list.Items[i]
			listed[[3]string{gvk.kind, u.GetNamespace(), u.GetName()}] = true
			at, ok := u.GetAnnotations()[breakglass.AnnotationExpiresAt]
			if !ok {
				continue
			}
			exp, err := time.Parse(time.RFC3339, at)
			if err != nil {
				continue
			}
			name := fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
			is := now().After(exp)
			m.set(gvk.kind, u.GetNamespace(), u.GetName(), is)
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
		m.forget(gvk.kind, listed)
	}
	return expired, errors.Join(errs...)
}

// set sets the gauge of one paused object.
func (m *ExpiryMonitor) set(kind, ns, name string, expired bool) {
	if m.Gauge == nil {
		return
	}
	if m.series == nil {
		m.series = map[[3]string]bool{}
	}
	m.series[[3]string{kind, ns, name}] = true
	v := 0.0
	if expired {
		v = 1
	}
	m.Gauge.WithLabelValues(kind, ns, name).Set(v)
}

// forget resets the series of kind whose pause ended since they were set:
// 0 for an object still listed (resumed: the annotations are gone), the
// series removed for one that is not (deleted). It runs after the objects
// of kind were listed; listed says which exist.
func (m *ExpiryMonitor) forget(kind string, listed map[[3]string]bool) {
	if m.Gauge == nil {
		return
	}
	for k, paused := range m.series {
		if k[0] != kind {
			continue
		}
		switch {
		case !listed[k]:
			m.Gauge.DeleteLabelValues(k[0], k[1], k[2])
			delete(m.series, k)
		case !paused:
			m.Gauge.WithLabelValues(k[0], k[1], k[2]).Set(0)
			delete(m.series, k)
		}
	}
	for k := range m.series {
		if k[0] == kind {
			m.series[k] = false // set again by the next pass while paused
		}
	}
}

func (m *ExpiryMonitor) event(ctx context.Context, u *unstructured.Unstructured, exp, now time.Time) error {
	ticket := u.GetAnnotations()[breakglass.AnnotationTicket]
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
