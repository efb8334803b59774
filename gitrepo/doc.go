// Package gitrepo reads and writes the GitOps repository: through the git
// command line for a work tree ([Open]), or in process with go-git for a
// bare clone the notifier makes itself ([Clone]), where the release image
// has no git. Both give the same Repo; an in-process clone does the
// notifier's operations (read, list, ancestry, file history, commit, fetch,
// compare-and-swap push) and refuses the rest with ErrNeedsGitCLI.
//
// Why both: the commands people run (propose, approve with SSH signatures,
// verify-commit, break-glass, rollback) work in the user's own work tree,
// with the transports, credential helpers and signing keys their git is
// configured with; the git CLI is what every CI runner already has. The
// notifier runs in a scratch image, and needs only a handful of operations,
// which go-git does in process. Neither needs a rebase: Update re-applies
// its change on the new tip by calling it again. go-git reports a lost push
// race differently per transport, so after a failed push the in-process
// clone asks the remote where the branch is: moved means ErrRejected.
//
// Writes never touch the caller's work tree or index: a commit is built in
// a temporary index (read-tree, hash-object, update-index, write-tree,
// commit-tree) from its parent, and references move only by compare-and-swap
// (update-ref with the old value, or a push the remote accepts only as a
// fast-forward). Nothing is ever force-pushed.
package gitrepo
