// Package render turns an application directory of a GitOps repository into
// the set of Kubernetes objects it declares, and computes the canonical
// rendered hash of that set.
//
// An application is either a kustomization (rendered with krusty, plugins
// and kustomize's Helm off, load restrictions root-only, in a child process of the
// binary when UseWorker says so, as the CLI does; see "The render child"
// below), a Helm chart (a directory holding Chart.yaml, rendered as Argo
// CD's Helm source does) or a directory of plain YAML/JSON manifests.
// Charts, of a chart app or of a kustomization's helmCharts, are rendered
// by throughline with Helm's SDK from files read through the confined
// filesystem (helm.go, helmkustomize.go, render/helmrender; docs/helm.md). Every file access goes through a filesystem confined to
// the repository root: paths and symlinks that resolve outside it are refused,
// files above a size cap are refused, and nothing is ever written. Remote
// kustomize resources are never fetched.
//
// # What never leaves the repository
//
// The guarantees, and the tests that hold them:
//
//   - One decision of "remote" (remote.go: KustomizeRemote, IsRemote) over
//     every entry of every field that makes kustomize v0.21 load something,
//     listed in one place (fields.go: loadedEntries): resources, bases,
//     components, crds, configurations, generators, transformers, validators,
//     patchesStrategicMerge, patches[].path, patchesJson6902[].path,
//     replacements[].path, openapi.path, configMapGenerator and
//     secretGenerator files (plain and key=path), envs and env, helmCharts
//     valuesFile and additionalValuesFiles, helmGlobals and
//     helmChartInflationGenerator homes and values, in every kustomization of
//     the app's tree. An entry is remote when kustomize's own parsers say so
//     (url.Parse with an http/https scheme, any case: the loader's
//     IsRemoteFile; kustomize's git repo-spec parser, reached through
//     resource.Origin.Append: git::, scp-form user@host:org/repo,
//     github.com/org/repo, ssh://, file://, ?ref=) or git's (any scheme://,
//     [user@]host:path), or when it only looks remote (a host-like first
//     element, a ref query) and no such path exists. Remote entries go to the
//     policy (floating-remote-resource, exit 3) and Build refuses every one
//     before krusty runs (exit 4, naming the kustomization file and the
//     field). Every other entry must be a relative path that resolves inside
//     the root and exists there, else Build refuses it before krusty runs.
//     A helmCharts entry whose chart is not in the repository comes only
//     from the ChartSource (pinned by digest; none: rule unpinned-chart,
//     exit 3), fetched by the parent before the render starts; kustomize
//     itself never sees helmCharts. Tests: cmp TestRemoteEntriesAreNeverFetched (every field x
//     http, HTTP, https, HtTpS, git::, scp-form, file://, github.com/...?ref=,
//     ssh://, pinned forms, against an HTTP server and git's smart-HTTP server
//     on 127.0.0.1 that record every connection, an ssh stand-in that records
//     every call, and a private TMPDIR where no kustomize-* clone may appear),
//     TestNestedRemoteEntryIsRefused, TestMissingLocalEntryIsRefusedBeforeKrusty,
//     TestLocalEntriesStillRender; render TestRemoteDecision and the fuzz
//     target FuzzRemoteEntry (whatever kustomize's parsers would fetch or clone
//     is decided remote and listed for its field).
//   - Kustomize cannot fetch over HTTP (netguard.go): its loader fetches with
//     a zero http.Client, i.e. http.DefaultTransport. The package's init
//     wraps that transport's Proxy hook, which net/http calls on the
//     requesting goroutine before it looks up or dials a connection, and
//     refuses every request whose call stack passes through
//     sigs.k8s.io/kustomize. This covers a field kustomize adds later and
//     locations the kustomization does not show (a builtin PatchTransformer
//     config with path: http://... in a transformers file). It is
//     process-wide but refuses nothing else: forge's client (a
//     DefaultTransport client) and any other request of throughline serve or
//     promote pass, also while a render runs; a guard keyed on "krusty is
//     running" (krustyMu) would have refused those, and replacing
//     DefaultTransport by a wrapper would break code that asserts it is an
//     *http.Transport (k8s.io/apimachinery does so at init). Tests:
//     TestKustomizeCannotFetch, TestGuardLeavesOtherClientsAlone.
//     Not covered: a kustomize that builds its own transport or fetches on
//     another goroutine, and a request that net/http hands to an HTTP/2
//     connection already open to the same host:port in DefaultTransport's
//     pool (that path skips the Proxy hook); the entry decision above refuses
//     every known field first.
//   - Git: kustomize clones by running the git binary (os/exec, looked up on
//     PATH at clone time, into os.TempDir) for an entry its repo-spec parser
//     accepts, and only from Loader.New, which v0.21 calls for resources,
//     bases, components, generators, transformers and validators (and the
//     kustomizations they name, which the renderer inspects recursively).
//     Every such entry is refused before krusty runs, by the same parser.
//     krusty itself runs in the render child (worker.go), whose PATH is an
//     empty directory: a future kustomize that calls Loader.New from a
//     field loadedEntries does not list finds no git (and no ssh) to run,
//     and clones nothing. Test: TestWorkerCannotRunGit (an entry that slips
//     past the refusal: in-process kustomize runs the git on PATH, the
//     child reports "git": executable file not found and leaves nothing in
//     TMPDIR). In-process (UseWorker(nil): the package's own tests, a
//     library caller) the exec cannot be stopped without changing PATH
//     process-wide. Deploy the sidecar with an egress policy as well.
//   - Messages: errors of the confined filesystem name paths relative to the
//     root; a path outside the root (directly, through a symlink, or through
//     a dangling symlink) is "path resolves outside the repository root",
//     never its machine path, and reads the same whether it exists, is
//     missing or is unreadable. Tests: render TestOutsideRootMessages, cmp
//     TestMissingLocalEntryIsRefusedBeforeKrusty.
//
// # Parsing limits, cancellation, Secret values
//
//   - Limits (limits.go, one place): every file is capped at
//     DefaultMaxFileSize and a render at DefaultMaxTotalRead bytes; every
//     YAML document krusty or the plain-manifest reader will parse is
//     checked first, in ConfinedFS.ReadFile (which every byte krusty reads
//     passes through) and, for patches and configurations written inline
//     in a kustomization, in Open: a bounded walk over yaml.v3's node tree
//     counts the nodes alias expansion adds (kyaml's kio.ByteReader and
//     RNode.DeAnchor copy every alias; yaml.v3 refuses excessive aliasing
//     only when decoding into Go values) against MaxYAMLAliasNodes for the
//     whole render, and the nesting against MaxYAMLDepth. A stream that is
//     not YAML from some point on is also checked part by part, as kyaml
//     splits it at "---" lines. Files that are not YAML (env files,
//     generator file sources) meet only the size caps. A refusal is exit 4
//     naming the file. Measured: the 9-wide bomb of 7 and 10 levels in a
//     resource ends in 0.05 s at 61 MiB peak RSS; expansion just under the
//     cap renders in 0.3 s at 94 MiB. Tests: TestAliasBombsAreRefused
//     (every position: resources, a base's and a component's resource,
//     patches path and inline, patchesStrategicMerge, patchesJson6902,
//     generator files and envs, configurations, crds, replacements,
//     openapi, transformers, the kustomization, plain manifests; bounded
//     allocation), TestAliasBudgetIsPerRender, TestYAMLLimits,
//     TestAliasesWithinLimitsRender, the fuzz target FuzzKustomization.
//   - Cancellation: krusty cannot see the context. In the render child it
//     need not: the parent kills the child (SIGKILL to its process group)
//     when the render's context ends, so --timeout and SIGTERM end a render
//     within a second whatever krusty is doing, also after its last file
//     read. Measured: 4000 Deployments with 4000 inline patches (krusty
//     reads two files, then applies the patches) ran 48 s in-process
//     under --timeout 1s and end 1.0 s after it in the child, no child
//     left. Tests: cmd/throughline TestTimeoutAndCancelEndKrusty. In
//     process, ReadFile and ReadDir check the context bound by Open and
//     Build: a cancelled render stops at its next file read and is not
//     invalid input (TestCancelledRenderStopsAtNextRead); work after the
//     last read runs to its end there.
//   - Memory: the child watches the memory its Go runtime has mapped
//     (DefaultMaxMemory, 256 MiB) and ends itself past it (watchMemory,
//     exit workerMemoryExit); RLIMIT_DATA above it is the kernel's
//     backstop. Build returns ErrMemoryBudget, exit 4 naming the
//     kustomization; the parent goes on. Tests: TestWorkerMemoryBudget,
//     cmd/throughline TestMemoryBudget.
//   - Secret values: no error of Open or Build holds a value of a Secret
//     the render read. A duplicated key names the file, the object and the
//     field with its lines (kyaml would append the whole object); every
//     other message, krusty's resource dumps included, has each value of
//     data and stringData of every Secret read, and of every
//     secretGenerator literal, env value and file source, replaced by
//     Redacted (as written, line by line, base64-encoded and decoded;
//     values under 4 bytes only as whole words). Tests:
//     TestSecretValuesNeverInErrors (duplicate keys plain and through
//     kustomize, generator clashes, identity clashes, a failing patch, a
//     patch of the wrong type, an ambiguous reference, syntax errors),
//     cmp TestGenerateNeverEchoesSecretValues (policy violation next to a
//     Secret, invalid base64).
//
// # The render child
//
// With UseWorker set (the CLI sets it for every command: render, cmp
// generate, promote, pin, ...), Build keeps Open, the entry checks, the
// limits pre-check and everything after krusty in the calling process and
// runs only krusty in a child: the binary's hidden WorkerCommand, which
// reads the request (root, app directory, file size cap, whether to
// trace) on stdin, caps its memory, opens the app again and writes the
// objects (JSON), the probes of its filesystem trace (for the cmp cache)
// and a typed error (exit code, file, message, Secret values redacted) on
// stdout. The child gets none of the parent's environment: PATH is an
// empty directory, HOME and TMPDIR fresh empty directories removed after,
// no GIT_* (but GIT_CONFIG_NOSYSTEM, GIT_TERMINAL_PROMPT=0), no proxy
// variables; netguard.go stays as a second layer inside it. Each render
// starting in a fresh process also keeps kustomize's process-wide state
// (its openapi schema) from one render out of the next; in-process,
// runKrusty resets a custom schema after use (TestCustomSchemaDoesNotLeak).
// Objects, hash, trace and errors are those of the in-process render
// (TestWorkerRendersAsInProcess). Cost: a cold render of the example
// production overlay takes about 70-85 ms in-process and 100-115 ms with
// the child (20-run loops on a shared 2-core machine); a cmp cache hit
// renders nothing and starts no child (TestCMPCacheHitStartsNoChild).
//
// The rendered hash is sha256 over the objects sorted by (group, kind,
// namespace, name), each serialized with RFC 8785 (JSON Canonicalization
// Scheme) followed by "\n". The package imports no Kubernetes client and does
// no network I/O, so the Argo CD plugin path starts fast.
package render
