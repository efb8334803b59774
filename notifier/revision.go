package notifier

import (
	"context"
	"fmt"
	"strings"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/promotion"
)

// FluxMetaOriginRevision is the event metadata key of the commit an OCI
// artifact names in its org.opencontainers.image.revision annotation:
// kustomize-controller sends it (as originRevision of its group) for a
// Kustomization whose source is an OCIRepository whose artifact has one.
const FluxMetaOriginRevision = "originRevision"

// parseRevision reads a revision as a controller reports it: Flux's
// "<ref>@sha1:<hex>" and "<ref>@sha256:<hex>" (a GitRepository's branch
// and commit, an OCIRepository's tag and manifest digest), "sha1:<hex>",
// "sha256:<hex>" (Argo CD's OCI sources), the old "<ref>/<hex>", or a bare
// commit id. git is its Git reading (a full commit id: 40 hex after sha1,
// 64 after sha256, bare or old-format), oci its OCI reading (sha256:<hex>,
// from a sha256 form only); either is "" when the form has none, and ok is
// false when it has neither (a tag without digest, a short or upper-case
// id, another algorithm). A sha256 form has both readings: a commit of a
// SHA-256 Git repository is written exactly like an artifact's digest, so
// only the environment's source says which it is (resolveRevision), never
// the form.
func parseRevision(rev string) (git, oci string, ok bool) {
	algoHex := func(s string) (string, string, bool) {
		switch {
		case strings.HasPrefix(s, "sha1:") && validSHA1(s[len("sha1:"):]):
			return s[len("sha1:"):], "", true
		case strings.HasPrefix(s, "sha256:") && validSHA256(s[len("sha256:"):]):
			return s[len("sha256:"):], s, true
		}
		return "", "", false
	}
	if i := strings.LastIndex(rev, "@"); i >= 0 {
		if i == 0 || strings.ContainsAny(rev[:i], "@ \t\n") {
			return "", "", false
		}
		return algoHex(rev[i+1:])
	}
	if strings.HasPrefix(rev, "sha1:") || strings.HasPrefix(rev, "sha256:") {
		return algoHex(rev)
	}
	if i := strings.LastIndex(rev, "/"); i >= 0 {
		rev = rev[i+1:]
	}
	if validCommit(rev) {
		return rev, "", true
	}
	return "", "", false
}

func validSHA1(h string) bool   { return len(h) == 40 && validCommit(h) }
func validSHA256(h string) bool { return len(h) == 64 && validCommit(h) }

// parseOrigin reads Flux's originRevision (the OCI artifact's revision
// annotation, as flux push artifact --revision writes it: "<ref>@sha1:<hex>",
// "<ref>@sha256:<hex>", or a bare commit id) as the commit it names; "" when
// it names none.
func parseOrigin(rev string) string { return promotion.RevisionCommit(rev) }

// resolveRevision settles ev.Revision by the environment's source kind: the
// OCI reading in an OCI environment, the Git reading in a Git one; when the
// form has only the other reading, that one (decide halts on the kind the
// record does not desire). Without a registry (or with an empty one) the
// kind is OCI only when the controller reported the artifact's origin
// revision, which only an OCI artifact has.
func resolveRevision(ev *Event, kind environment.SourceKind) {
	if kind == "" {
		kind = environment.SourceGit
		if ev.Origin != "" {
			kind = environment.SourceOCI
		}
	}
	switch {
	case kind == environment.SourceOCI && ev.OCI != "":
		ev.Revision = ev.OCI
	case ev.Revision == "":
		ev.Revision = ev.OCI
	}
}

// sourceKind is ev's environment's source kind by the registry at the base
// ("" without a registry, or for an environment it does not list).
func (p *Processor) sourceKind(ctx context.Context, ev Event) (environment.SourceKind, error) {
	if p.Registry == nil {
		return "", nil
	}
	reg, err := p.Registry(ctx)
	if err != nil {
		return "", err
	}
	e, ok := reg.Get(ev.Environment)
	if !ok {
		return "", nil
	}
	return e.SourceKind(), nil
}

// sourceMismatch says why the observed revision's kind is not the one the
// record desires ("" when it is): a Git revision for an OCI environment, an
// OCI artifact (a digest, or an origin revision reported) for a Git one.
func sourceMismatch(ev Event, rec *promotion.Record) string {
	desired := rec.Reconciling.DesiredRevision
	switch {
	case rec.IsOCI() && !promotion.ValidOCIRevision(ev.Revision):
		return "wrong source: the controller observed " + ev.Revision + ", a Git commit; the promotion desires the OCI artifact " + desired
	case !rec.IsOCI() && promotion.ValidOCIRevision(ev.Revision):
		return "wrong source: the controller observed the OCI artifact " + ev.Revision + "; the promotion desires the Git commit " + desired
	case !rec.IsOCI() && ev.Origin != "":
		return "wrong source: the controller observed " + ev.Revision + " of an OCI artifact built from " + ev.Origin +
			"; the environment's source is Git and the promotion desires the commit " + desired
	}
	return ""
}

// relateOCI is the notifier's rule for an OCI environment (the record's
// desired revision a digest): the desired artifact, whose reported origin
// (when Flux reports one) is the commit it was built from; or an artifact
// built from an earlier commit of the branch (wait: the controller has not
// pulled the desired one yet; earlier says so), or one whose origin is not
// reported (wait: only the reconcileDeadline tells a stale artifact from a
// wrong one). Any other artifact halts (why): built from the desired commit
// but another digest (re-pushed, another artifact), or from a later or
// unrelated commit (an artifact has no "later commit rendering the same
// objects": promote verify accepts the desired digest only). An artifact
// is never accepted on its annotation alone: the Acceptance's rendered
// hash must still be the approved one.
func (p *Processor) relateOCI(ctx context.Context, ev Event, rec *promotion.Record) (rel evidence.Relation, earlier, why string, err error) {
	desired, commit := rec.Reconciling.DesiredRevision, rec.Reconciling.DesiredCommit
	switch {
	case ev.Revision == desired && ev.Origin != "" && ev.Origin != commit:
		return evidence.Unrelated, "", fmt.Sprintf("wrong artifact: the controller observed the desired %s, but it names commit %s "+
			"in its revision annotation; the promotion recorded it built from %s", desired, ev.Origin, commit), nil
	case ev.Revision == desired:
		return evidence.Desired, "", "", nil
	case ev.Origin == "":
		return evidence.Earlier, fmt.Sprintf("the controller observed the OCI artifact %s, not the desired %s (built from %s), "+
			"and reports no revision it was built from: waited for until the reconcileDeadline", ev.Revision, desired, commit), "", nil
	case ev.Origin == commit:
		return evidence.Unrelated, "", fmt.Sprintf("wrong artifact: the controller observed %s, built from the desired commit %s "+
			"by its revision annotation, but the desired artifact is %s: another digest is another artifact", ev.Revision, commit, desired), nil
	}
	ancestor, err := p.Git.IsAncestor(ctx, ev.Origin, commit)
	if err != nil {
		return evidence.Unrelated, "", "", fmt.Errorf("relating the artifact %s's commit %s to the desired %s: %w", ev.Revision, ev.Origin, commit, err)
	}
	if ancestor {
		return evidence.Earlier, fmt.Sprintf("the controller observed the OCI artifact %s, built from %s, an ancestor of the desired %s (%s)",
			ev.Revision, ev.Origin, commit, desired), "", nil
	}
	return evidence.Unrelated, "", fmt.Sprintf("wrong artifact: the controller observed %s, built from %s, which is not the desired commit %s "+
		"nor an ancestor of it; the promotion desires the artifact %s", ev.Revision, ev.Origin, commit, desired), nil
}
