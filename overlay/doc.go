// Package overlay makes in-place edits of kustomization overlays and plain
// manifests that keep comments, order, quoting and indentation.
//
// A File holds the text of a YAML file, its parsed documents and the edits
// planned against that text. Every edit changes the text of one value (or
// inserts lines) and the parsed documents alike; Bytes applies the edits and
// proves that the result parses to exactly the planned documents, so an edit
// the text cannot carry cleanly is an error, never a silently different
// file. A Kustomization adds the operations of its images: list (find an
// entry by name or by the name it renders, set newTag, newName or digest,
// append entries); ContainerImages walks the image fields of plain
// manifests; SplitImage, ImageName and JoinImage split and join image
// references the way kustomize's images: matches them.
//
// The package reads and writes no files and does not log: callers pass the
// bytes and write the result. Errors about the input are *exitcode.InvalidInput
// naming the file.
package overlay
