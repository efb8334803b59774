// Package gate is the judge of a change to the GitOps repository: the one
// place that decides what a pull request may change, with one finding type
// ([Finding]: rule id, class, environment, file, object, field, old -> new)
// that the CLI only prints.
//
// It has three entry points:
//
//   - [CheckChange], the check every pull request can be required to pass
//     (throughline check): the repository check, and the promotion gate
//     when the change carries a promotion record;
//   - [CheckPromotion], the promotion gate (throughline promote check): the
//     change may touch only the target overlay's artifact and the target's
//     record (plus what the policy file allows), and the record must be
//     VERIFIED and APPROVED, with signed approvals and re-verified
//     supply-chain evidence, for exactly what head renders;
//   - [CheckRepository], the repository check of any change.
//
// The repository check reads the environment registry at the change's
// base (never at its head: a change must not edit the rules that judge
// it), lists every app of every registered environment (the environments'
// path patterns matched against the overlays that exist at base and at
// head, plus their explicit apps), renders every overlay at both revisions
// (each revision exported once) and lists every difference per environment
// with its promotion class (promotion.Classify). It refuses:
//
//   - a protected environment's render that changes outside a promotion
//     record (RuleProtected); a change that carries exactly one record,
//     promotion/<app>/<env>.yaml, is a promotion, and its target is the
//     promotion gate's to judge: [RepositoryReport.Promotion];
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
// at base is listed in [RepositoryReport.Preexisting], not refused (it is
// not the change's doing, and refusing it would block every unrelated
// change).
//
// The judgements the write side must agree with are exported for package
// promote, which refuses before it writes what this package would refuse
// on the pull request: the record's target against the registry
// ([BaseRecordTarget]), signed approvals ([ReadApprovers]), the
// supply-chain re-verification ([Reverify]), candidacy claims, committed
// Acceptances and the chart contract. The gate reads history only through
// package ledger and never imports promote (the write side).
package gate
