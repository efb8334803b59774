// Package repocheck is the repository check of a change: the check every
// pull request of a GitOps repository can be required to pass, promotion
// or not.
//
// It reads the environment registry at the change's base (never at its
// head: a change must not edit the rules that judge it), lists every app
// of every registered environment (the environments' path patterns
// matched against the overlays that exist at base and at head, plus their
// explicit apps), renders every overlay at both revisions (each revision
// exported once) and lists every difference per environment with its
// promotion class (promotion.Classify). It refuses:
//
//   - a protected environment's render that changes outside a promotion
//     record (RuleProtected); a change that carries exactly one record,
//     promotion/<app>/<env>.yaml, is a promotion, and its target is the
//     promotion gate's (promote.Check) to judge: [Report.Promotion];
//   - one object (group, kind, namespace, name) rendered on one cluster by
//     two apps or two paths (RuleDuplicate);
//   - a controller object (an Argo CD Application or ApplicationSet, a Flux
//     Kustomization: files under clusters/ and files an environment's
//     controllers patterns match) that is not bound to an overlay path and
//     destination of the one environment that owns its file
//     (RuleController);
//   - an Argo CD multi-source Application two of whose sources render the
//     same object (RuleMultiSource).
//
// The last three are judged on the head's tree; one that was already true
// at base is listed in [Report.Preexisting], not refused (it is not the
// change's doing, and refusing it would block every unrelated change).
package repocheck
