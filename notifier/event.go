package notifier

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1"
)

// Event is a delivery reduced to what the processing needs.
type Event struct {
	// Source is "flux" or "argocd".
	Source      string
	App         string
	Environment string
	// Revision is what the controller observed: a full commit id, or in an
	// OCI environment the artifact's manifest digest (sha256:<hex>). The
	// decoders set the Git reading; Process settles it by the
	// environment's source kind (resolveRevision).
	Revision string
	// OCI is the revision's OCI reading, "" when its form has none
	// (parseRevision).
	OCI string
	// Origin is the commit an OCI artifact names in its revision
	// annotation, as Flux reported it (originRevision), "" when it did not.
	Origin string
	// Degraded is set when the controller reports a failed or degraded
	// application (Flux severity error, Argo CD health Degraded).
	Degraded bool
	// ApplyFailed is set when the controller reports that it did not
	// finish applying the observed revision (a Flux error event other
	// than HealthCheckFailed or PruneFailed: the build, dry-run or apply
	// failed; an Argo CD sync operation Failed or Error): what runs, the
	// live Acceptance with it, may still be an earlier render, which then
	// is the controller's failure, not a contradiction of the record.
	ApplyFailed bool
	// SyncRevision is an Argo CD Application's status.sync.revision (the
	// commit its last comparison rendered) when it differs from Revision
	// (the last sync operation's), and Synced whether that comparison
	// found the live objects equal to that commit's render.
	SyncRevision string
	Synced       bool
	Reason       string
	Message      string
	// Controller, Instance and Object name the reporter.
	Controller, Instance, Object string
	// Ref is the controller object the delivery is about (a Flux
	// Kustomization, an Argo CD Application): it binds the namespace the
	// Acceptance is read from.
	Ref ObjectRef
}

// ObjectRef names a controller object.
type ObjectRef struct {
	Kind, Namespace, Name string
}

func (r ObjectRef) String() string { return r.Kind + " " + r.Namespace + "/" + r.Name }

// ErrMalformed is wrapped when a delivery cannot be decoded.
var ErrMalformed = errors.New("malformed delivery")

// ErrIrrelevant is wrapped when a well-formed delivery carries nothing to
// decide (no revision, an informational event).
var ErrIrrelevant = errors.New("nothing to decide")

// Flux event metadata keys read by the notifier. An Alert's
// spec.eventMetadata adds app and environment to every event it forwards.
const (
	FluxMetaApp         = "app"
	FluxMetaEnvironment = "environment"
	FluxMetaRevision    = "revision"
)

// kustomize-controller's Ready reasons (the reason of its events) for a
// failure after everything was applied.
const (
	FluxReasonHealthCheckFailed = "HealthCheckFailed"
	FluxReasonPruneFailed       = "PruneFailed"
)

// decodeFlux decodes a Flux notification-controller event (generic and
// generic-hmac providers post eventv1.Event as JSON).
func decodeFlux(body []byte) (Event, error) {
	var fe eventv1.Event
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&fe); err != nil {
		return Event{}, fmt.Errorf("flux event: %w: %w", ErrMalformed, err)
	}
	return fluxEvent(fe)
}

// fluxEvent reduces a Flux event to an Event: the delivery's (decodeFlux)
// and the resync's (a Kustomization's status read as the event
// kustomize-controller would send).
func fluxEvent(fe eventv1.Event) (Event, error) {
	if fe.InvolvedObject.Kind == "" || fe.InvolvedObject.Name == "" {
		return Event{}, fmt.Errorf("flux event: %w: involvedObject kind and name are required", ErrMalformed)
	}
	ev := Event{
		Source:      "flux",
		App:         fe.Metadata[FluxMetaApp],
		Environment: fe.Metadata[FluxMetaEnvironment],
		Reason:      fe.Reason,
		Message:     fe.Message,
		Controller:  fe.ReportingController,
		Instance:    fe.ReportingInstance,
		Object:      fe.InvolvedObject.Kind + "/" + fe.InvolvedObject.Namespace + "/" + fe.InvolvedObject.Name,
		Ref:         ObjectRef{Kind: fe.InvolvedObject.Kind, Namespace: fe.InvolvedObject.Namespace, Name: fe.InvolvedObject.Name},
	}
	if ev.App == "" {
		ev.App = fe.InvolvedObject.Name
	}
	rev := fe.Metadata[FluxMetaRevision]
	if rev == "" {
		return ev, fmt.Errorf("flux event %s %s: %w: no revision in metadata", ev.Object, fe.Reason, ErrIrrelevant)
	}
	var ok bool
	if ev.Revision, ev.OCI, ok = parseRevision(rev); !ok {
		return ev, fmt.Errorf("flux event %s: %w: revision %q is neither <ref>@sha1:<commit> nor <ref|tag>@sha256:<commit|digest>",
			ev.Object, ErrMalformed, rev)
	}
	if o := fe.Metadata[FluxMetaOriginRevision]; o != "" {
		if ev.Origin = parseOrigin(o); ev.Origin == "" {
			return ev, fmt.Errorf("flux event %s: %w: originRevision %q names no full commit id", ev.Object, ErrMalformed, o)
		}
	}
	switch {
	case fe.Severity == eventv1.EventSeverityError:
		ev.Degraded = true
		// kustomize-controller sets these two only after everything was
		// applied; every other failure (ArtifactFailed, BuildFailed,
		// ReconciliationFailed) may have applied nothing.
		ev.ApplyFailed = fe.Reason != FluxReasonHealthCheckFailed && fe.Reason != FluxReasonPruneFailed
	case fe.Reason == "ReconciliationSucceeded":
	default:
		// Progressing and other informational events come before the
		// health checks: only the final word of a reconciliation counts.
		return ev, fmt.Errorf("flux event %s %s: %w", ev.Object, fe.Reason, ErrIrrelevant)
	}
	if ev.Environment == "" {
		return ev, fmt.Errorf("flux event %s: %w: no %q in metadata (set it in the Alert's spec.eventMetadata)",
			ev.Object, ErrMalformed, FluxMetaEnvironment)
	}
	return ev, nil
}

func validCommit(rev string) bool {
	return (len(rev) == 40 || len(rev) == 64) && strings.Trim(rev, "0123456789abcdef") == ""
}

// ArgoCDPayload is the body of the shipped Argo CD notifications template
// (deploy/argocd/argocd-notifications-cm.yaml).
type ArgoCDPayload struct {
	Trigger     string `json:"trigger"`
	Application string `json:"application"`
	Namespace   string `json:"namespace"`
	// App and Environment are the Application's throughline.dev/app and
	// throughline.dev/environment labels ("" or "<no value>" when absent).
	App         string `json:"app"`
	Environment string `json:"environment"`
	// Revision is operationState.syncResult.revision, SyncRevision
	// status.sync.revision.
	Revision     string `json:"revision"`
	SyncRevision string `json:"syncRevision"`
	SyncStatus   string `json:"syncStatus"`
	Phase        string `json:"phase"`
	Health       string `json:"health"`
	Message      string `json:"message"`
	// RetryCount is operationState.retryCount: a Running operation that
	// retries a failed sync (syncPolicy.retry, or the controller's retry
	// of an apply the API server refused) has failed at least once.
	RetryCount int64 `json:"retryCount,omitempty"`
}

// retrying reports whether p is a sync operation still Running that has
// already failed and is being retried.
func (p ArgoCDPayload) retrying() bool { return templ(p.Phase) == "Running" && p.RetryCount > 0 }

func templ(s string) string {
	s = strings.TrimSpace(s)
	if s == "<no value>" {
		return ""
	}
	return s
}

// decodeArgoCD decodes the shipped Argo CD webhook template.
func decodeArgoCD(body []byte) (Event, error) {
	var p ArgoCDPayload
	if err := json.Unmarshal(body, &p); err != nil {
		return Event{}, fmt.Errorf("argocd notification: %w: %w", ErrMalformed, err)
	}
	return argoCDEvent(p)
}

// argoCDEvent reduces the shipped template's payload to an Event: the
// delivery's (decodeArgoCD) and the resync's (an Application's status read
// as the template renders it).
func argoCDEvent(p ArgoCDPayload) (Event, error) {
	if templ(p.Application) == "" {
		return Event{}, fmt.Errorf("argocd notification: %w: application is required", ErrMalformed)
	}
	ev := Event{
		Source: "argocd", App: templ(p.App), Environment: templ(p.Environment),
		Reason: templ(p.Trigger), Message: templ(p.Message),
		Controller: "argocd-notifications-controller",
		Object:     "Application/" + templ(p.Namespace) + "/" + templ(p.Application),
		Ref:        ObjectRef{Kind: "Application", Namespace: templ(p.Namespace), Name: templ(p.Application)},
	}
	if ev.App == "" {
		ev.App = templ(p.Application)
	}
	rev := templ(p.Revision)
	if rev == "" {
		rev = templ(p.SyncRevision)
	}
	if rev == "" {
		return ev, fmt.Errorf("argocd notification %s: %w: no revision", ev.Object, ErrIrrelevant)
	}
	var ok bool
	if ev.Revision, ev.OCI, ok = parseRevision(rev); !ok {
		return ev, fmt.Errorf("argocd notification %s: %w: revision %q is neither a full commit id nor an OCI digest (sha256:<hex>)",
			ev.Object, ErrMalformed, rev)
	}
	if ev.Revision != rev {
		// Argo CD writes a Git revision as the bare commit id: a
		// sha256:<hex> is an OCI source's digest, nothing else is Argo CD's.
		if ev.Revision = ""; ev.OCI == "" {
			return ev, fmt.Errorf("argocd notification %s: %w: revision %q is neither a full commit id nor an OCI digest (sha256:<hex>)",
				ev.Object, ErrMalformed, rev)
		}
	}
	if sync := templ(p.SyncRevision); sync != "" && sync != rev && validCommit(sync) {
		ev.SyncRevision = sync
	}
	ev.Synced = templ(p.SyncStatus) == "Synced"
	ev.ApplyFailed = templ(p.Phase) == "Failed" || templ(p.Phase) == "Error" || p.retrying()
	ev.Degraded = templ(p.Health) == "Degraded" || ev.ApplyFailed
	if ev.Degraded {
		phase := orNone(templ(p.Phase))
		if p.retrying() {
			phase = fmt.Sprintf("%s, failed and retried %d times", phase, p.RetryCount)
		}
		what := fmt.Sprintf("health %s, operation %s", orNone(templ(p.Health)), phase)
		if ev.Message != "" {
			what += ": " + ev.Message
		}
		ev.Message = what
	}
	if ev.Environment == "" {
		return ev, fmt.Errorf("argocd notification %s: %w: no environment (label the Application throughline.dev/environment)", ev.Object, ErrMalformed)
	}
	return ev, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
