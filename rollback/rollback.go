// Package rollback finds the artifacts an environment accepted before, from
// the promotion records in Git history, and tells which of them a rollback
// may go back to. A rollback is a new desired state proposed through the
// promotion path (a new attempt on a branch), never a revert of history.
package rollback

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/render"
)

// AnnotationIrreversible marks a workload whose artifact ran a data
// migration that the previous artifact cannot read back. A rollback away
// from a workload carrying it with the value "true" (on the object or its
// pod template) needs an explicit acknowledgement.
const AnnotationIrreversible = "throughline.dev/irreversible-migration"

// Previous is the --to value that picks the newest accepted digest other
// than the one currently desired.
const Previous = "previous"

// Accepted is one artifact the environment accepted, as recorded in Git.
type Accepted struct {
	Artifact         promotion.Artifact `json:"artifact"`
	PromotionID      string             `json:"promotionId"`
	Attempt          int                `json:"attempt"`
	Commit           string             `json:"commit"` // the commit whose record says ACCEPTED
	ObservedRevision string             `json:"observedRevision"`
	RuntimeEvidence  string             `json:"runtimeEvidence"`
}

// RefusedError is a rollback target that may not be used.
type RefusedError struct{ Msg string }

func (e *RefusedError) Error() string { return e.Msg }

// History lists, newest first, every distinct digest the record of app in
// env was ACCEPTED for in the history of rev (one entry per digest: its
// newest acceptance), and the highest attempt number seen per digest.
// Records that do not parse are skipped: history is evidence only where it
// is valid.
func History(ctx context.Context, repo *gitrepo.Repo, rev, app, env string) ([]Accepted, map[string]int, error) {
	file := promotion.RecordPath(app, env)
	out, err := repo.Git(ctx, "log", "--format=%H", rev, "--", repo.Prefix+file)
	if err != nil {
		return nil, nil, fmt.Errorf("history of %s at %s: %w", file, rev, err)
	}
	var hist []Accepted
	seen := map[string]bool{}
	attempts := map[string]int{}
	for _, c := range strings.Fields(out) {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		data, err := repo.ReadFile(ctx, c, file)
		if errors.Is(err, gitrepo.ErrNotFound) {
			continue // deleted in this commit
		}
		if err != nil {
			return nil, nil, err
		}
		rec, err := promotion.Parse(file, data)
		if err != nil || rec.App != app || rec.Target.Environment != env {
			continue
		}
		d := rec.Artifact.Digest
		attempts[d] = max(attempts[d], rec.Attempt)
		if rec.State != promotion.Accepted || rec.Accepted == nil || seen[d] {
			continue
		}
		seen[d] = true
		hist = append(hist, Accepted{Artifact: rec.Artifact, PromotionID: rec.PromotionID, Attempt: rec.Attempt,
			Commit: c, ObservedRevision: rec.Accepted.ObservedRevision, RuntimeEvidence: rec.Accepted.RuntimeEvidence})
	}
	return hist, attempts, nil
}

// Pick chooses the rollback target from hist: to is a digest
// (sha256:<hex>, or a unique prefix of at least 12 hex digits) or
// Previous; current is the digest desired now, which is never a rollback
// target.
func Pick(hist []Accepted, to, current, env string) (Accepted, error) {
	if to == Previous {
		for _, a := range hist {
			if a.Artifact.Digest != current {
				return a, nil
			}
		}
		return Accepted{}, &RefusedError{fmt.Sprintf("no digest other than the current %s was ever ACCEPTED in %s: nothing to roll back to", current, env)}
	}
	want := to
	if !strings.HasPrefix(want, "sha256:") {
		want = "sha256:" + want
	}
	if len(want) < len("sha256:")+12 {
		return Accepted{}, &RefusedError{fmt.Sprintf("--to %q: want a digest sha256:<hex> (at least 12 hex digits) or %q", to, Previous)}
	}
	var found []Accepted
	for _, a := range hist {
		if strings.HasPrefix(a.Artifact.Digest, want) {
			found = append(found, a)
		}
	}
	switch {
	case len(found) == 0:
		return Accepted{}, &RefusedError{fmt.Sprintf("%s was never ACCEPTED in %s (accepted there: %s): a rollback goes only to a digest the environment verified", to, env, digests(hist))}
	case len(found) > 1:
		return Accepted{}, &RefusedError{fmt.Sprintf("--to %s names several accepted digests (%s): give more digits", to, digests(found))}
	case found[0].Artifact.Digest == current:
		return Accepted{}, &RefusedError{fmt.Sprintf("%s is already the desired digest of %s: nothing to roll back", current, env)}
	}
	return found[0], nil
}

func digests(as []Accepted) string {
	if len(as) == 0 {
		return "none"
	}
	var s []string
	for _, a := range as {
		s = append(s, a.Artifact.Digest)
	}
	return strings.Join(s, ", ")
}

// Irreversible lists the workloads of objs that run digest (the artifact
// being rolled back from) and carry AnnotationIrreversible "true" on the
// object or on a pod template.
func Irreversible(objs []render.Object, digest string) []string {
	var out []string
	for _, o := range objs {
		runs := false
		for _, c := range render.Containers(o) {
			if strings.HasSuffix(c.Image, "@"+digest) {
				runs = true
			}
		}
		if runs && annotated(o.Map, "") {
			out = append(out, o.ID().String())
		}
	}
	return out
}

// annotated walks metadata.annotations of the object and of every nested
// template.
func annotated(m map[string]any, at string) bool {
	if md, ok := m["metadata"].(map[string]any); ok {
		if an, ok := md["annotations"].(map[string]any); ok {
			if v, _ := an[AnnotationIrreversible].(string); strings.EqualFold(v, "true") {
				return true
			}
		}
	}
	for k, v := range m {
		if k == "metadata" || k == "status" {
			continue
		}
		if sub, ok := v.(map[string]any); ok && annotated(sub, path.Join(at, k)) {
			return true
		}
	}
	return false
}
