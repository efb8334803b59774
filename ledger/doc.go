// Package ledger is the one reader of the promotion ledger through Git
// history: every version of a promotion record (Reader.Versions), the
// artifacts an environment accepted as the records and the notifier's
// evidence files prove them (History), the source environment's evidence
// that a digest may move on (ReadSourceEvidence, ChecksPassed), which
// digests a rollback may go back to (Pick) and whether a rollback record's
// claim of a prior acceptance is backed (CheckPrior), the records on the
// base and attempt branches (Status), and the tag -> digest history the
// records keep (MovedTags).
//
// It only reads. The promote package writes records and runs the gates on
// top of it; the web view (chainview) and the delivery metrics read
// through it and never import promote (TestOnlyLedgerReadsHistory). A
// rollback is a new desired state proposed through the promotion path (a
// new attempt on a branch), never a revert of history.
package ledger
