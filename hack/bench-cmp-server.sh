#!/usr/bin/env bash
# Generate through Argo CD's real cmp-server (v3.5, e2e/argocd/v35) over the
# monorepo of internal/benchfixture (300 apps x 3 environments), as
# argocd-repo-server drives it: tar streaming, discovery, the named plugin
# (e2e/argocd/harness/bench.go; docs/benchmarks.md, "Through Argo CD's
# cmp-server"). Four CMP servers side by side: throughline-cmp through the
# resident renderer, throughline-cmp in-process, `kustomize build` and
# `true` (the stream alone); three repo-server settings (as shipped; .git
# excluded from the tar and manifest-generate-paths; the same without the
# plugin's discover rule); a cold pass and a pass after a commit changing
# one app.
#
#   hack/bench-cmp-server.sh [KUSTOMIZE_BIN]     (default bin/kustomize: make tools)
#
# Environment: THROUGHLINE_BENCH_APPS (300), THROUGHLINE_BENCH_SAMPLE (apps
# generated per pass, 4: each in 3 environments through each plugin),
# THROUGHLINE_BENCH_SAMPLE_WHOLE (1: the settings that stream the whole
# repository, one environment, cold only). About 12 minutes on a loaded
# 2-core machine at the defaults, most of it the whole-repository streams.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
kz=${1:-$PWD/bin/kustomize}
[ -x "$kz" ] || { echo "bench-cmp-server: $kz is missing (make tools)" >&2; exit 1; }
THROUGHLINE_BENCH_KUSTOMIZE=$(cd "$(dirname "$kz")" && pwd)/$(basename "$kz")
export THROUGHLINE_BENCH_KUSTOMIZE
echo "== $(nproc) cores; $(uptime); $("$kz" version 2>/dev/null | head -1); $(go version)"
cd e2e/argocd/v35
# The test binary run directly: its tables print as each pass ends.
bin=$(mktemp -d "${TMPDIR:-/tmp}/bench-cmp-server.XXXXXX")
trap 'rm -rf "$bin"' EXIT
go test -c -o "$bin/v35.test" .
"$bin/v35.test" -test.run '^$' -test.bench '^BenchmarkCMPServerMonorepo$' -test.benchtime 1x -test.timeout 90m
