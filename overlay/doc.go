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
// Pin and SetImages are the two uses that touch an application on disk:
// PlanPin renders it and finds the images the pin rule refuses (by
// policy.DecideImage, the decision render makes: an allow-listed image in
// its environment is Allowed and left alone), Apply
// writes the digests the caller resolved (no registry is asked here) and
// Verify renders again to prove nothing is left; SetImages writes
// NAME=[NEWNAME:]TAG@DIGEST sets (ParseImageSet) into the images: of its
// kustomization and proves every container of a set name renders the set
// reference. They replace files atomically; everything else reads and
// writes no files: callers pass the bytes and write the result. Nothing
// logs. Errors about the input are *exitcode.InvalidInput naming the file.
package overlay
