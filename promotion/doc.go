// Package promotion holds the promotion/v1 record: its Go types, the JSON
// Schema every read and write is validated against (embedded from
// schema/promotion-v1.schema.json), the state machine, the attempt key, the
// approval input hash and the classification of a target's rendered diff.
//
// A record is a repository document (not a Kubernetes object), one per app
// and target environment at promotion/<app>/<env>.yaml; its history is Git's
// plus the transitions it lists. States only move forward on evidence:
//
//	CANDIDATE -> VERIFIED -> APPROVED -> RECONCILING -> ACCEPTED
//	any state before ACCEPTED -> HALTED or REJECTED (with a reason)
//
// VERIFIED evidence is of one of two kinds: another environment accepted
// the artifact (a promotion; records may omit the kind), or the target
// environment itself accepted this digest before (kind prior-acceptance, a
// rollback), naming the earlier attempt, its evidence file and the commit
// holding both.
//
// A state is never skipped and never entered without its evidence fields; a
// fix makes a new candidate (a new attempt), never an edit of an old one.
//
// ReadRecord and ReadPolicy read a record and the policy from the GitOps
// repository (through package gitops, the one strict reader); the rest of
// the package does no I/O of its own. It never logs.
package promotion
