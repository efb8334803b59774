package promote

import (
	"context"
	"fmt"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/registry"
)

// RuleOCIArtifact refuses an OCI environment's desired artifact that does
// not carry the merged commit: the tag the environment follows names an
// artifact whose revision annotation names no commit, or another one than
// the merged commit or an earlier one.
const RuleOCIArtifact = "oci-artifact"

// AnnotationRevision is the OCI annotation naming the source revision an
// artifact was built from (flux push artifact --revision writes
// "<branch>@sha1:<commit>").
const AnnotationRevision = "org.opencontainers.image.revision"

// Artifacts reads an OCI artifact's manifest digest and annotations
// (registry.Client.Annotated).
type Artifacts interface {
	Annotated(ctx context.Context, ref string) (*registry.Manifest, error)
}

// DesiredArtifact is the desired revision of env when its source is an OCI
// artifact (the registry at base says so: environments.<env>.source.oci):
// the manifest digest its repository:tag resolves to, provided the
// artifact's revision annotation names commit, the merged commit. It is ""
// for a Git environment (the commit is the desired revision). A tag that
// still names an artifact of an earlier commit is not decided yet (exit
// 5: CI has not pushed the merged commit's artifact); one naming no
// commit, a later or an unrelated one is refused (exit 3, rule
// oci-artifact): the artifact the controller will pull is not the merged
// commit's.
func DesiredArtifact(ctx context.Context, r *gitops.Repo, arts Artifacts, base, env, commit string) (string, error) {
	reg, err := promotion.ReadRegistry(ctx, r, base)
	if err != nil {
		return "", err
	}
	e, ok := reg.Get(env)
	if !ok || e.OCI() == nil {
		return "", nil
	}
	ref := e.OCIReference()
	if arts == nil {
		return "", fmt.Errorf("environment %s's source is the OCI artifact %s: no registry client to resolve it", env, ref)
	}
	m, err := arts.Annotated(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("resolving environment %s's OCI source %s: %w", env, ref, err)
	}
	refuse := func(format string, args ...any) error {
		return &exitcode.Refusal{Rule: RuleOCIArtifact, File: promotion.PolicyFile, Field: "environments." + env + ".source.oci",
			Reason: fmt.Sprintf("%s (%s): ", ref, m.Digest) + fmt.Sprintf(format, args...)}
	}
	ann := m.Annotations[AnnotationRevision]
	built := promotion.RevisionCommit(ann)
	switch {
	case !promotion.ValidOCIRevision(m.Digest):
		return "", refuse("its digest is not sha256:<hex>")
	case built == "":
		return "", refuse("its %s annotation %q names no full commit id (push it with flux push artifact --revision <branch>@sha1:<commit>)",
			AnnotationRevision, ann)
	case built == commit:
		return m.Digest, nil
	}
	earlier, err := r.IsAncestor(ctx, built, commit)
	if err != nil {
		return "", fmt.Errorf("relating %s's commit %s to the merged %s: %w", ref, built, commit, err)
	}
	if earlier {
		return "", exitcode.NotDecided(fmt.Errorf("%s (%s) is the artifact of %s, an ancestor of the merged %s: "+
			"CI has not pushed the merged commit's artifact yet, run again once it has", ref, m.Digest, built, commit))
	}
	return "", refuse("it was built from %s, which is neither the merged commit %s nor an ancestor of it", built, commit)
}

// reconcileTo records RECONCILING: the desired artifact digest built from
// commit for an OCI environment, else commit itself.
func reconcileTo(rec *promotion.Record, digest, commit string, at time.Time, by string) error {
	if digest != "" {
		return rec.ReconcileOCI(digest, commit, at, by)
	}
	return rec.Reconcile(commit, at, by)
}

// desiredNote is what a RECONCILING commit message says is desired.
func desiredNote(digest, commit string) string {
	if digest == "" {
		return commit
	}
	return fmt.Sprintf("%s (the OCI artifact of %s)", digest, commit)
}
