package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PromotionPolicy is the repository's promotion policy
// (throughline-policy.yaml). Absent, every default is the strict one; a nil
// *PromotionPolicy answers every question strictly. promotion.ParsePolicy
// decodes and checks it.
type PromotionPolicy struct {
	metav1.TypeMeta `json:",inline"`

	// Environments is the environment registry: each environment's
	// overlay paths, cluster, destination namespaces, protection,
	// approvers and controller objects. Package environment checks it and
	// answers which environment a path belongs to.
	Environments map[string]EnvironmentPolicy `json:"environments,omitempty"`
	// AllowedSigners is the repository-relative path of the approvers'
	// SSH signing keys, in git's allowed-signers format
	// (gpg.ssh.allowedSignersFile). Approvals are commits signed by one of
	// an environment's Approvers with the key this file lists for them.
	AllowedSigners string `json:"allowedSigners,omitempty"`
	// EvidenceSigners is the repository-relative path of the notifiers'
	// SSH public keys, in git's allowed-signers format: each line's
	// principals are the environments whose runtime evidence that key
	// may sign (a notifier signs every evidence/v1 file it writes, in a
	// .sig file beside it). When it is set, the gates accept runtime
	// evidence only with a valid signature by a key listed for the
	// evidence's environment.
	EvidenceSigners string `json:"evidenceSigners,omitempty"`
	// EvidenceMaxAge is how old the source environment's runtime evidence
	// may be when a promotion is verified (default DefaultEvidenceMaxAge;
	// an environment's evidenceMaxAge overrides it for its own evidence).
	EvidenceMaxAge *metav1.Duration `json:"evidenceMaxAge,omitempty"`
	// AllowParameters are top-level keys of the target overlay's
	// kustomization a promotion may change besides the image digest
	// (e.g. "replicas").
	AllowParameters []string `json:"allowParameters,omitempty"`
	// AllowBoundaryChanges lets a promotion change boundary fields
	// (namespace, PVC, ResourceQuota, LimitRange, Secret references).
	AllowBoundaryChanges bool `json:"allowBoundary,omitempty"`
	// AllowCrossEnvironment lets the target render name another environment.
	AllowCrossEnvironment bool `json:"allowCrossEnvironment,omitempty"`
	// MovedTags is what the PR gate does when the records in Git history
	// name the artifact's tag with another digest: "refuse" (the default)
	// or "warn".
	MovedTags string `json:"movedTags,omitempty"`
}

// DefaultEvidenceMaxAge is how old runtime evidence may be when neither
// the policy nor the source environment sets evidenceMaxAge: a week. An
// acceptance older than that is re-verified (promoted again into the
// source environment) before it moves on.
const DefaultEvidenceMaxAge = 7 * 24 * time.Hour

// EvidenceMaxAgeOf is how old env's runtime evidence may be: env's own
// evidenceMaxAge, else the policy's, else DefaultEvidenceMaxAge.
func (p *PromotionPolicy) EvidenceMaxAgeOf(env string) time.Duration {
	if p == nil {
		return DefaultEvidenceMaxAge
	}
	if e, ok := p.Environments[env]; ok && e.EvidenceMaxAge != nil {
		return e.EvidenceMaxAge.Duration
	}
	if p.EvidenceMaxAge != nil {
		return p.EvidenceMaxAge.Duration
	}
	return DefaultEvidenceMaxAge
}

// The values of MovedTags.
const (
	MovedTagsRefuse = "refuse"
	MovedTagsWarn   = "warn"
)

// WarnMovedTags reports whether a tag the records name with another
// digest is only a warning (movedTags: warn).
func (p *PromotionPolicy) WarnMovedTags() bool { return p != nil && p.MovedTags == MovedTagsWarn }

// EnvironmentPolicy is one environment of the policy.
type EnvironmentPolicy struct {
	// Cluster is the environment's cluster (the target cluster of the
	// attempt key).
	Cluster string `json:"cluster,omitempty"`
	// Paths are the overlay paths of the environment's apps, relative to
	// the repository root. One segment of a pattern may be "*": it
	// matches the app's name (apps/*/overlays/production).
	Paths []string `json:"paths,omitempty"`
	// Apps are explicit overlay paths by app name, for apps outside
	// Paths' patterns.
	Apps map[string]string `json:"apps,omitempty"`
	// Namespaces are the destination namespaces of the environment's
	// controllers (path.Match patterns).
	Namespaces []string `json:"namespaces,omitempty"`
	// Protected environments change only through a promotion record
	// (throughline check refuses any other change of their render).
	Protected bool `json:"protected,omitempty"`
	// Approvers are the principals (as in AllowedSigners) whose signed
	// approval counts in this environment.
	Approvers []string `json:"approvers,omitempty"`
	// MinApprovals is how many distinct approvers must sign (0: 1 when
	// Approvers is set).
	MinApprovals int `json:"minApprovals,omitempty"`
	// Controllers are the files of the environment's controller objects
	// (Argo CD Applications, Flux Kustomizations; path.Match patterns
	// relative to the repository root, e.g. clusters/production/*.yaml).
	Controllers []string `json:"controllers,omitempty"`
	// ReconcileDeadline is how long a record may stay RECONCILING before
	// the notifier halts it, naming the revision the controller is stuck
	// on (none: no deadline).
	ReconcileDeadline *metav1.Duration `json:"reconcileDeadline,omitempty"`
	// EvidenceMaxAge is how old this environment's runtime evidence may
	// be when a promotion out of it is verified (default: the policy's
	// evidenceMaxAge).
	EvidenceMaxAge *metav1.Duration `json:"evidenceMaxAge,omitempty"`
	// RolloutDeadline is how long, from the generation's first
	// observation, the running images may take to be verified before the
	// Acceptance turns Ready False with reason DeadlineExceeded (none: no
	// deadline). The render copies it into the Acceptance's
	// spec.deadlines.rollout.
	RolloutDeadline *metav1.Duration `json:"rolloutDeadline,omitempty"`

	// PromotesFrom are the environments whose accepted artifacts are
	// promoted into this one (the promotion order). An environment that
	// lists none is a first environment: the only kind `promote candidate`
	// (CI) may write a candidate into.
	PromotesFrom []string `json:"promotesFrom,omitempty"`

	// Trust is the supply-chain evidence (signatures, attestations) every
	// gate into this environment verifies of the image (none: no
	// evidence required).
	Trust *TrustPolicy `json:"trust,omitempty"`
	// Source is what the environment's controllers read: Git (nil) or an
	// OCI artifact pushed from it (docs/oci-sources.md).
	Source *SourcePolicy `json:"source,omitempty"`
	// Binding is what every controller object of the environment is bound
	// to besides its overlay paths, namespaces and cluster name: the
	// repository and revision it reads, the API server it deploys to and
	// the trust layer it runs under (nil: those are not checked).
	Binding *ControllerBinding `json:"binding,omitempty"`

	// Windows are when promotions into the environment may happen: a
	// promotion is open while any window is (none: at any time). Each is
	// a cron schedule of its openings, how long each lasts and its time
	// zone, as an Argo CD sync window.
	Windows []PromotionWindow `json:"windows,omitempty"`
	// Freezes are named date ranges in which no promotion into the
	// environment happens, whatever the windows say.
	Freezes []Freeze `json:"freezes,omitempty"`
	// RollbackInFreeze is whether a rollback to a digest the environment
	// accepted before is held by the windows and freezes: "hold" (the
	// default: like any promotion) or "allow" (a rollback is never held).
	RollbackInFreeze string `json:"rollbackInFreeze,omitempty"`
}

// The values of EnvironmentPolicy.RollbackInFreeze.
const (
	RollbackInFreezeHold  = "hold"
	RollbackInFreezeAllow = "allow"
)

// PromotionWindow is a recurring time when promotions may happen.
type PromotionWindow struct {
	// Schedule is when each opening starts: a five-field cron expression
	// (minute hour day-of-month month day-of-week), e.g. "0 9 * * 1-4".
	Schedule string `json:"schedule"`
	// Duration is how long each opening lasts (e.g. 8h).
	Duration metav1.Duration `json:"duration"`
	// TimeZone is the IANA time zone Schedule is read in (default UTC).
	TimeZone string `json:"timeZone,omitempty"`
}

// Freeze is a named date range without promotions.
type Freeze struct {
	// Name names the freeze in every refusal (e.g. year-end).
	Name string `json:"name"`
	// From and Until bound it: from From (included) until Until (excluded).
	From  metav1.Time `json:"from"`
	Until metav1.Time `json:"until"`
	// Reason says why, for the people it stops.
	Reason string `json:"reason,omitempty"`
}

// ControllerBinding is what an environment's controller objects (Argo CD
// Applications, Flux Kustomizations) must be bound to; throughline check
// refuses one that is not. RepoURLs, TargetRevision, Project and
// FluxSource are checked when set. Server, KubeConfigSecret and
// ServiceAccountName are compared exactly: empty means the controller must
// not set them (it deploys to the cluster it runs in, with the
// controller's own identity).
type ControllerBinding struct {
	// RepoURLs are the Git repository URLs an Argo CD source may read
	// (compared without a trailing ".git" or "/").
	RepoURLs []string `json:"repoURLs,omitempty"`
	// TargetRevision is the branch an Argo CD source follows, or with
	// Pinned the branch whose commits it is pinned to.
	TargetRevision string `json:"targetRevision,omitempty"`
	// Pinned: the environment's Argo CD sources name a commit
	// (targetRevision: 40 hex digits), moved only by the promotion:
	// `promote reconcile` pins the app's Application to the commit it
	// records as desired, in the commit that records it. throughline check
	// refuses a pin that is not a full commit id, and one that is not the
	// desired revision of the app's record once it has one.
	Pinned bool `json:"pinned,omitempty"`
	// Server is the Argo CD destination.server of the environment's
	// cluster.
	Server string `json:"server,omitempty"`
	// Project is the Argo CD AppProject of the environment's Applications.
	Project string `json:"project,omitempty"`
	// FluxSource is the source of the environment's Flux Kustomizations
	// (spec.sourceRef; its namespace defaults to the Kustomization's).
	FluxSource *FluxSourceRef `json:"fluxSource,omitempty"`
	// ServiceAccountName is the service account kustomize-controller
	// impersonates for the environment's Kustomizations.
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// KubeConfigSecret is the Secret of the kubeconfig a Kustomization
	// applies with (spec.kubeConfig.secretRef.name) when the environment's
	// cluster is not the one Flux runs in.
	KubeConfigSecret string `json:"kubeConfigSecret,omitempty"`
}

// FluxSourceRef is a Flux source object.
type FluxSourceRef struct {
	// Kind is GitRepository, OCIRepository or Bucket.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Namespace is the source's namespace (empty: the Kustomization's).
	Namespace string `json:"namespace,omitempty"`
}

// Cluster is env's cluster: the policy's, else the environment's name.
func (p *PromotionPolicy) Cluster(env string) string {
	if p != nil {
		if e, ok := p.Environments[env]; ok && e.Cluster != "" {
			return e.Cluster
		}
	}
	return env
}

// Allows reports whether key is an allowed parameter.
func (p *PromotionPolicy) Allows(key string) bool {
	if p == nil {
		return false
	}
	for _, k := range p.AllowParameters {
		if k == key {
			return true
		}
	}
	return false
}

// AllowBoundary reports whether boundary changes are allowed.
func (p *PromotionPolicy) AllowBoundary() bool { return p != nil && p.AllowBoundaryChanges }

// AllowCross reports whether cross-environment objects are allowed.
func (p *PromotionPolicy) AllowCross() bool { return p != nil && p.AllowCrossEnvironment }
