package ledger

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile"
)

// RuleChecksNotPassed refuses a source environment whose Acceptance
// declared runtime checks when its evidence does not show every one of them
// Passed after a completed soak.
const RuleChecksNotPassed = "checks-not-passed"

// ChecksPassed reads the runtime checks the source overlay declared at the
// evidence's observed revision (the Acceptance the verifier evaluated:
// checkfile.File in rec's target path, from Git, not from the evidence) and
// says why ev does not show them passed ("" when it does, or none were
// declared): each declared check listed with verdict Passed, and a soak
// that started and lasted the declared soak before the verification.
// ReadSourceEvidence refuses by it (rule checks-not-passed); the web view
// shows its verdict beside the checks.
func ChecksPassed(ctx context.Context, r *gitops.Repo, rec *promotion.Record, ev *evidence.Record) (string, error) {
	file := path.Join(rec.Target.Path, checkfile.File)
	data, err := r.ReadFile(ctx, ev.ObservedTree(), file)
	if errors.Is(err, gitrepo.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	declared, err := checkfile.Parse(file, data, checkfile.Options{AnyNamespace: true})
	if err != nil {
		return "", err
	}
	listed := map[string]evidence.Check{}
	for _, c := range ev.Checks {
		listed[c.Name] = c
	}
	var bad []string
	for _, d := range declared.Checks {
		c, ok := listed[d.Name]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("check %s is not in the evidence", d.Name))
		case c.Verdict != string(v1alpha1.CheckPassed):
			bad = append(bad, "check "+c.String())
		}
	}
	if len(bad) > 0 {
		return fmt.Sprintf("%s at %s declares %d runtime check(s), not all passed: %s", file, gitrepo.Short(ev.ObservedRevision),
			len(declared.Checks), strings.Join(bad, "; ")), nil
	}
	soak := declared.Soak.Duration
	switch {
	case ev.SoakStartedAt == nil || ev.VerifiedAt == nil:
		return fmt.Sprintf("%s at %s declares a soak of %s; the evidence shows no completed soak (soakStartedAt and verifiedAt)",
			file, gitrepo.Short(ev.ObservedRevision), soak), nil
	case ev.VerifiedAt.Sub(*ev.SoakStartedAt) < soak:
		return fmt.Sprintf("%s at %s declares a soak of %s; the evidence's soak lasted %s (soakStartedAt %s, verifiedAt %s)",
			file, gitrepo.Short(ev.ObservedRevision), soak, ev.VerifiedAt.Sub(*ev.SoakStartedAt), ev.SoakStartedAt.Format("15:04:05Z"),
			ev.VerifiedAt.Format("15:04:05Z")), nil
	}
	return "", nil
}
