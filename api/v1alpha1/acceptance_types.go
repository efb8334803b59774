package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Labels set on every Acceptance; the notifier finds an app's Acceptance by
// them (values are object names, see acceptance.ObjectName).
const (
	LabelManagedBy   = "app.kubernetes.io/managed-by"
	LabelApp         = Group + "/app"
	LabelEnvironment = Group + "/environment"
)

// Condition types written to an Acceptance's status. Ready is the verdict;
// Reconciling and Stalled follow kstatus, so that Flux's health checks (and
// any kstatus reader) see InProgress while the rollout runs and Failed on a
// mismatch.
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// Reasons of the Ready condition (Reconciling and Stalled carry the same
// reason).
const (
	ReasonVerified          = "Verified"
	ReasonRolloutInProgress = "RolloutInProgress"
	ReasonImageMismatch     = "ImageMismatch"
	ReasonUnverifiable      = "Unverifiable"
	ReasonWorkloadNotFound  = "WorkloadNotFound"
	ReasonInvalid           = "Invalid"
)

// Acceptance declares the artifact identity a render produced and records
// whether the cluster runs it. The render owns the spec; the verifier
// (throughline serve) owns the status.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=acc,categories=throughline
type Acceptance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec AcceptanceSpec `json:"spec"`
	// Status is absent from what a render declares (omitzero keeps the
	// rendered object free of an empty status).
	Status AcceptanceStatus `json:"status,omitempty,omitzero"`
}

// AcceptanceList is a list of Acceptances.
//
// +kubebuilder:object:root=true
type AcceptanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Acceptance `json:"items"`
}

// AcceptanceSpec is what the render declared.
type AcceptanceSpec struct {
	// App is the application name (Argo CD Application or Flux
	// Kustomization).
	App string `json:"app"`
	// Environment is the environment the render targets (staging,
	// production, ...).
	Environment   string `json:"environment,omitempty"`
	SourceRepoURL string `json:"sourceRepoURL,omitempty"`
	// SourcePath is the application path relative to the repository root.
	SourcePath string `json:"sourcePath,omitempty"`
	// SourceRevision is never written by a render: the rendered output is a
	// pure function of the app's files, so that a commit elsewhere in the
	// repository leaves the Acceptance (and the app's sync status) unchanged.
	// The revision a controller applied is the controller's own report (Argo
	// CD status.sync.revision, Flux status.lastAppliedRevision), which the
	// notifier and break-glass read.
	//
	// Deprecated: kept so that an Acceptance written by an earlier plugin
	// (and a sidecar not yet upgraded during a rollout) is neither refused nor
	// pruned; it is read by nothing.
	SourceRevision string `json:"sourceRevision,omitempty"`
	// RenderedHash is the canonical hash of the rendered object set, without
	// this Acceptance.
	RenderedHash string `json:"renderedHash"`
	ObjectCount  int    `json:"objectCount"`
	// Renderer is the throughline version that rendered.
	Renderer string `json:"renderer,omitempty"`
	// Exceptions are the allow-list exceptions this render used.
	Exceptions []Exception `json:"exceptions,omitempty"`
	Workloads  []Workload  `json:"workloads"`
	// Checks are the runtime checks declared for the app in this
	// environment; being in the Acceptance, they are covered by the
	// rendered hash's object set and travel with the render.
	Checks *RuntimeChecks `json:"checks,omitempty"`
	// Deadlines are the environment's deadlines (environment registry).
	Deadlines *Deadlines `json:"deadlines,omitempty"`
	// Charts are the Helm charts the render used, each pinned by digest
	// (a chart of the repository by the digest of its files): promoted
	// with the image digests (docs/helm.md, "Promoting a chart").
	Charts []Chart `json:"charts,omitempty"`
}

// Chart is one Helm chart a render used.
type Chart struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Digest is the OCI manifest digest or the sha256 of the .tgz (a
	// remote chart, as its lock file pins it), or the sha256 of a chart's
	// files in the repository (render.TreeDigest).
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{64}$`
	Digest string `json:"digest"`
	// Source is the chart repository (oci://host/path, https://host/path)
	// or the chart's directory in the repository.
	Source string `json:"source"`
	// ValuesSchema identifies the chart's values.schema.json (none: the
	// chart has no values schema).
	ValuesSchema *ChartValuesSchema `json:"valuesSchema,omitempty"`
}

// ChartValuesSchema identifies a chart's values.schema.json.
type ChartValuesSchema struct {
	// Digest is the sha256 of the file as packaged.
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{64}$`
	Digest string `json:"digest"`
	// ID is the schema's $id, when it has one.
	ID string `json:"id,omitempty"`
	// Version is the schema's "version" keyword, when it has one.
	Version string `json:"version,omitempty"`
}

// Exception is an allow-list entry that a render used: an image let
// through the pin rule (Image, Pattern) or a Secret let through the Secret
// rule (Secret).
type Exception struct {
	Image   string `json:"image,omitempty"`
	Pattern string `json:"pattern,omitempty"`
	// Secret is the name of the allow-list's secrets[] entry used.
	Secret string `json:"secret,omitempty"`
	Reason string `json:"reason"`
	// Object is the object that names the image, or the Secret (Kind.group
	// namespace/name).
	Object string `json:"object,omitempty"`
	// Field is the field path of the image in the object (data, stringData
	// for a Secret).
	Field string `json:"field,omitempty"`
}

// Workload is an object that runs containers.
type Workload struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Namespace  string      `json:"namespace,omitempty"`
	Name       string      `json:"name"`
	Containers []Container `json:"containers"`
}

// Container is one declared container image.
type Container struct {
	Name string `json:"name"`
	// Path is the field path of the container in the object.
	Path  string `json:"path"`
	Image string `json:"image"`
	// Digest is the declared digest (empty only for an allow-listed
	// exception).
	Digest string `json:"digest,omitempty"`
}

// Outcome is the verdict on one container, one workload or one Acceptance.
type Outcome string

// Outcomes, from best to worst.
const (
	// OutcomeVerified: the running image is the declared one.
	OutcomeVerified Outcome = "Verified"
	// OutcomePending: not decided yet (rollout in progress, no imageID
	// reported).
	OutcomePending Outcome = "Pending"
	// OutcomeUnverifiable: the declared digest could not be resolved
	// (registry unreachable, digest unknown, node platform unknown). Never
	// Verified.
	OutcomeUnverifiable Outcome = "Unverifiable"
	// OutcomeMismatch: the running image is not the declared one.
	OutcomeMismatch Outcome = "Mismatch"
)

// MatchKind says how a verified imageID matched the declared digest.
type MatchKind string

// Match kinds (docs/concepts.md, "The imageID match").
const (
	// MatchExact: the imageID's digest is the declared digest.
	MatchExact MatchKind = "Exact"
	// MatchIndexChild: the declared digest is an index and the imageID is its
	// child manifest for the node's platform.
	MatchIndexChild MatchKind = "IndexChild"
	// MatchConfigDigest: the imageID is the config digest of the declared
	// manifest (or of the index child for the node's platform).
	MatchConfigDigest MatchKind = "ConfigDigest"
)

// AcceptanceStatus is the status the verifier writes to an Acceptance.
type AcceptanceStatus struct {
	// ObservedGeneration is the generation of the spec that the verdict is
	// about.
	ObservedGeneration int64 `json:"observedGeneration"`
	// RenderedHash is spec.renderedHash of the generation verified.
	RenderedHash string `json:"renderedHash,omitempty"`
	// VerifiedAt is when the running images were first verified for this
	// generation (absent unless Ready is True).
	VerifiedAt *metav1.Time `json:"verifiedAt,omitempty"`
	// Conditions: Ready, Reconciling and Stalled.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Workloads is what the verifier observed per workload.
	Workloads []WorkloadStatus `json:"workloads,omitempty"`
	// SoakStartedAt is when the running images were verified and the checks'
	// soak began (absent without checks).
	SoakStartedAt *metav1.Time `json:"soakStartedAt,omitempty"`
	// Checks is each runtime check's last evaluation.
	Checks []CheckStatus `json:"checks,omitempty"`
}

// WorkloadStatus is one workload in status.
type WorkloadStatus struct {
	Kind      string  `json:"kind"`
	Namespace string  `json:"namespace,omitempty"`
	Name      string  `json:"name"`
	Outcome   Outcome `json:"outcome"`
	// Revision is the pod-template-hash / controller-revision-hash of the
	// current revision.
	Revision string `json:"revision,omitempty"`
	// Pods is the number of Pods of the current revision checked.
	Pods       int               `json:"pods"`
	Message    string            `json:"message,omitempty"`
	Containers []ContainerStatus `json:"containers,omitempty"`
}

// ContainerStatus is one declared container in status, with the distinct
// imageIDs observed.
type ContainerStatus struct {
	Name    string  `json:"name"`
	Digest  string  `json:"digest,omitempty"`
	Outcome Outcome `json:"outcome"`
	// Observed is each distinct imageID seen (at most 8), with its match.
	Observed []ObservedImage `json:"observed,omitempty"`
}

// ObservedImage is one distinct imageID seen for a container, with its
// verdict and how many Pods run it.
type ObservedImage struct {
	ImageID  string    `json:"imageID"`
	Outcome  Outcome   `json:"outcome"`
	Match    MatchKind `json:"match,omitempty"`
	Platform string    `json:"platform,omitempty"`
	Pods     int       `json:"pods"`
	// Pod is one of the Pods that run the imageID.
	Pod      string `json:"pod"`
	Restarts int32  `json:"restarts,omitempty"`
	Message  string `json:"message,omitempty"`
}
