// Package chainview is the read-only view of the promotion chain: from the
// GitOps repository at one revision (the promotion records, the notifier's
// evidence files, the break-glass pause records, the environment registry)
// it builds a Model (a grid of apps by environments, one Chain of nine
// arrows per promotion record, the accepted digests of every app with what
// a rollback would pick and refuse) and renders it as HTML pages with
// html/template: no JavaScript, one stylesheet, relative links, so that the
// same pages are served (Handler) or written as static files (WriteSite).
//
// It judges nothing on its own: each arrow's verdict comes from the gates
// that own the rule (ledger.ReadSourceEvidence, ledger.CheckPrior,
// ledger.History and Pick, evidence.Relate, ledger.StatusAll, and for a
// candidacy gate.CandidacyClaim and gate.SealedInGit: the view reads no
// registry). It never
// writes to the repository or the cluster, and it shows no Secret value or
// token: it reads no Secret and no credential (the forge client a
// ForgeLister holds sends its token to the forge only).
package chainview
