// Package gitrepo reads and writes the GitOps repository through the git
// command line.
//
// Why the git CLI and not go-git: the write path needs a compare-and-swap
// push that, on a non-fast-forward rejection, fetches and re-applies the
// change on the new tip (a rebase); go-git v5 has no rebase and its push
// reports a rejected reference in a way that differs between transports.
// The git CLI is what every GitOps controller and CI runner already has,
// it speaks every transport and credential helper the user configured, and
// it keeps the module free of another large dependency tree. Every command
// runs with a context, no terminal prompt and the user's own git config.
//
// Writes never touch the caller's work tree or index: a commit is built in
// a temporary index (read-tree, hash-object, update-index, write-tree,
// commit-tree) from its parent, and references move only by compare-and-swap
// (update-ref with the old value, or a push the remote accepts only as a
// fast-forward). Nothing is ever force-pushed.
package gitrepo
