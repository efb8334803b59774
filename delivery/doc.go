// Package delivery derives the delivery metrics of the GitOps repository
// from what Git holds: every version of every promotion record in the
// history of a revision, and the notifier's evidence files there.
//
// Per app and environment it measures, over a window:
//
//   - opened to approved: the record's CANDIDATE history entry (written
//     by promote propose, which opens the pull request: Git holds no
//     "PR opened" time, this is the closest one it does) to its APPROVED
//     entry (the approval that completed it);
//   - merged to observed: the committer time of the record's
//     reconciling.desiredRevision (the merge commit of the promotion PR;
//     the record holds no merge time, Git's commit does) to the
//     evidence's verifiedAt (the verifier's verification of the objects
//     the controller applied at the observed revision: Git holds no time
//     for the controller's sync itself, so this is an upper bound that
//     includes the rollout);
//   - observed to accepted: that verifiedAt to the record's ACCEPTED
//     history entry (the notifier's decision, the evidence's time);
//   - attempts per promotion (one promotion is an app, an environment and
//     a digest; its attempts are the records' attempt numbers);
//   - halts by failure class: the class of the HALTED evidence (source,
//     render, live, runtime, or any other value as itself), "unclassified"
//     for evidence without one, "unrecorded" for a HALTED record without
//     usable evidence.
//
// A figure whose timestamps do not exist is not measured, never invented.
// A record version or evidence file that cannot be used (it does not
// parse, its times run backwards, it belongs to no promotion) is skipped
// and counted as invalid, naming the file.
package delivery
