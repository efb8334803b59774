// Package chartsource fetches remote Helm charts pinned by digest.
//
// A remote chart (an OCI registry, oci://host/path, or an HTTP chart
// repository, https://host/path with its index.yaml) is used only when the
// lock file beside the kustomization or Chart.yaml that names it,
// throughline-charts.lock.yaml ([LockFile]), pins its repository, name and
// exact version to a digest: for OCI the manifest digest, for an HTTP
// repository the sha256 of the .tgz package. [Source.Chart] reads the lock
// through a filesystem confined to the repository root (the render's
// ConfinedFS), and [Fetcher.Fetch] returns the package verified against the
// pinned digest: an OCI manifest is fetched BY that digest (never by tag),
// must be a Helm chart artifact, and its one chart layer is size-capped and
// digest-checked; an HTTP package must hash to the pinned digest and to the
// digest the repository's index.yaml gives, and is downloaded only from the
// repository's own host. Packages are cached on disk by digest and verified
// again on every read, so a warm fetch makes no request.
//
// [Fetcher.Resolve] is pin's and resolve's side: a version to a digest (OCI:
// the tag's manifest digest; HTTP: the index's digest, verified by
// downloading the package). [UpdateLock] writes the lock file in place
// keeping its comments and order. [Record] and [CheckDrift] are drift
// records of chart versions.
//
// Refusals (exit 3) carry the rules [RuleUnpinnedChart],
// [RuleChartDigestMismatch], [RuleFloatingChartVersion], [RuleChartNotChart],
// [RuleChartTooLarge], [RuleChartForeignHost] and [RuleChartVersionMoved];
// a malformed lock file, Chart.yaml or chart reference is an
// *exitcode.InvalidInput (exit 4) naming the file and field; a source that
// cannot be reached is not decided (exit 5).
//
// Every request goes through remotelimit: an OCI manifest is bounded at
// 4 MiB, a chart package or layer at Options.MaxChartSize, an index.yaml at
// Options.MaxIndexSize (64 MiB), token responses at 64 KiB, on the wire and
// before go-containerregistry buffers anything (rule chart-too-large).
//
// An index.yaml is not parsed where it is downloaded: it is streamed to a
// file (Options.IndexDir) and handed to Options.LookupIndex, the seam
// between the unbounded parent and the memory-capped render child. The
// default, [LookupIndexFile], parses in the calling process and refuses an
// index above [MaxInProcessIndexSize] (4 MiB; [ErrIndexTooLarge]); the
// renderer's child runs LookupIndexFile itself on any index up to
// MaxIndexSize.
//
// The package does not log and does not import the renderer: the caller
// hands it the render's confined filesystem as a [FileReader].
package chartsource
