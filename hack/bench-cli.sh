#!/usr/bin/env bash
# Wall time and peak memory of `throughline cmp generate` against
# `kustomize build` on the benchmark overlay (the tree internal/benchfixture
# writes for the Go benchmarks: a base of N Deployments, one file each, and
# an overlay with namespace:, images: pinned by digest and a patch of every
# Deployment). Figures and their reading are in docs/benchmarks.md.
#
#   hack/bench-cli.sh THROUGHLINE_BIN KUSTOMIZE_BIN      (make bench-cli)
#
# 1. hyperfine on the SMALL app (20 Deployments): kustomize build, cmp
#    generate --no-cache (cold) and cmp generate with a warm cache (the cache
#    is filled from one checkout and hit from a fresh copy of the repository
#    with an unrelated file changed, as Argo CD streams a new commit).
#    Target: cmp generate <= 1.1x kustomize build.
# 2. peak RSS and wall time (/usr/bin/time -v) on the LARGE app (2,000
#    Deployments): kustomize build vs cmp generate --no-cache, then warm.
#
# Environment: BENCH_SMALL (20), BENCH_LARGE (2000; 0 skips step 2),
# BENCH_RUNS (hyperfine runs per round, 20), BENCH_ROUNDS (4), BENCH_OUT (where results are kept; default
# a temporary directory that is removed).
set -euo pipefail

tl=${1:?usage: bench-cli.sh THROUGHLINE_BIN KUSTOMIZE_BIN}
kz=${2:?usage: bench-cli.sh THROUGHLINE_BIN KUSTOMIZE_BIN}
small=${BENCH_SMALL:-20}
large=${BENCH_LARGE:-2000}
runs=${BENCH_RUNS:-20}
rounds=${BENCH_ROUNDS:-4}

for t in hyperfine /usr/bin/time python3; do
  command -v "$t" >/dev/null || { echo "bench-cli: $t is missing (apt-get install -y hyperfine time python3)" >&2; exit 1; }
done
tl=$(cd "$(dirname "$tl")" && pwd)/$(basename "$tl")
kz=$(cd "$(dirname "$kz")" && pwd)/$(basename "$kz")

work=$(mktemp -d "${TMPDIR:-/tmp}/throughline-bench-cli.XXXXXX")
trap 'rm -rf "$work"' EXIT
out=${BENCH_OUT:-$work/out}
mkdir -p "$out"

app=apps/bench/overlays/production

# gen_tree ROOT N writes the benchmark repository: the same tree the Go
# benchmarks render (internal/benchfixture, through hack/benchtree).
go build -o "$work/benchtree" "$(cd "$(dirname "$0")" && pwd)/benchtree"
gen_tree() { "$work/benchtree" -n "$2" "$1"; }

# new_commit SRC DST copies the repository and changes an unrelated file.
new_commit() {
  cp -r "$1" "$2"
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {revision: "2"}\n' >"$2/apps/other/configmap.yaml"
}

# check_counts ROOT N: both tools render N Deployments (throughline adds its
# Acceptance) from the app directory of ROOT.
check_counts() {
  local got
  got=$(cd "$1/$app" && "$kz" build . | grep -c '^kind: Deployment$' || true)
  [ "$got" = "$2" ] || { echo "bench-cli: kustomize build rendered $got Deployments, want $2" >&2; exit 1; }
  got=$(cd "$1/$app" && "$tl" cmp generate --no-cache 2>/dev/null | grep -c '^{"apiVersion":"apps/v1","kind":"Deployment",' || true)
  [ "$got" = "$2" ] || { echo "bench-cli: cmp generate rendered $got Deployments, want $2" >&2; exit 1; }
}

export ARGOCD_APP_SOURCE_PATH=$app ARGOCD_APP_NAME=bench-production ARGOCD_APP_REVISION=rev-1 \
  ARGOCD_APP_SOURCE_REPO_URL=https://git.example.test/bench.git THROUGHLINE_CACHE_DIR=$work/cache

echo "== machine: $(nproc) cores; $(uptime)"
echo "== $("$kz" version 2>/dev/null | head -1); throughline $("$tl" version 2>/dev/null | head -1 || true)"

echo "== 1. wall time, $small Deployments (hyperfine, $rounds rounds of $runs runs each)"
gen_tree "$work/small-1" "$small"
check_counts "$work/small-1" "$small"
# Fill the cache from the first checkout; hit it from the next commit.
(cd "$work/small-1/$app" && "$tl" cmp generate >/dev/null 2>&1)
new_commit "$work/small-1" "$work/small-2"
cd "$work/small-2/$app"
if ! ARGOCD_APP_REVISION=rev-2 "$tl" cmp generate 2>&1 >/dev/null | grep -q cached=true; then
  echo "bench-cli: the next commit's render was not served from the cache" >&2
  exit 1
fi
# hyperfine runs one command's runs back to back; on a shared machine the
# load drifts between them, so run ROUNDS rounds, alternating the order, and
# pool them. CPU time (user+sys) is reported too: it moves less with load.
for ((r = 1; r <= rounds; r++)); do
  cmds=(--command-name "kustomize build" "$kz build ."
        --command-name "cmp generate --no-cache" "$tl cmp generate --no-cache"
        --command-name "cmp generate (warm cache)" "$tl cmp generate")
  if ((r % 2 == 0)); then
    cmds=("${cmds[@]:6:3}" "${cmds[@]:3:3}" "${cmds[@]:0:3}")
  fi
  echo "-- round $r/$rounds: $(uptime)"
  ARGOCD_APP_REVISION=rev-2 hyperfine --shell=none --warmup 3 --runs "$runs" \
    --export-json "$out/cli-small-$r.json" --export-markdown "$out/cli-small-$r.md" "${cmds[@]}"
done
python3 - "$out"/cli-small-*.json <<'EOF2'
import json, statistics, sys
times, cpu = {}, {}
for f in sys.argv[1:]:
    for x in json.load(open(f))["results"]:
        times.setdefault(x["command"], []).extend(x["times"])
        # hyperfine records mean user and system times per command
        cpu.setdefault(x["command"], []).extend([x["user"] + x["system"]] * len(x["times"]))
k = "kustomize build"
print("pooled over %d rounds; ratios to kustomize build (target <= 1.10x):" % (len(sys.argv) - 1))
for name in (k, "cmp generate --no-cache", "cmp generate (warm cache)"):
    t, c = times[name], cpu[name]
    print("  %-26s n=%3d  wall mean %6.1f ms  median %6.1f ms  min %6.1f ms  cpu mean %6.1f ms  |  "
          "wall mean %.2fx  median %.2fx  min %.2fx  cpu %.2fx"
          % (name, len(t), 1e3 * statistics.mean(t), 1e3 * statistics.median(t), 1e3 * min(t), 1e3 * statistics.mean(c),
             statistics.mean(t) / statistics.mean(times[k]), statistics.median(t) / statistics.median(times[k]),
             min(t) / min(times[k]), statistics.mean(c) / statistics.mean(cpu[k])))
EOF2
cd "$work"

if [ "$large" -gt 0 ]; then
  echo "== 2. peak memory and wall time, $large Deployments (/usr/bin/time -v, one run each)"
  gen_tree "$work/large-1" "$large"
  peak() { # NAME WANT CMD...: one run, print max RSS and wall time; WANT (cached=true or
    # cached=false) must appear in throughline's log when set
    local name=$1 want=$2 log
    shift 2
    log=$out/time-$(echo "$name" | tr -cs 'a-z0-9' '-' | sed 's/-$//').txt
    /usr/bin/time -v "$@" >/dev/null 2>"$log" || { echo "bench-cli: $name failed:" >&2; tail -20 "$log" >&2; exit 1; }
    if [ -n "$want" ] && ! grep -q "$want" "$log"; then echo "bench-cli: $name: want $want in its log" >&2; exit 1; fi
    awk -v n="$name" -F': ' '/Maximum resident set size/ {rss = $2} /Elapsed \(wall clock\)/ {wall = $2}
      END {printf "%-34s peak RSS %7.1f MiB  wall %s\n", n, rss / 1024, wall}' "$log"
  }
  export THROUGHLINE_CACHE_DIR=$work/cache-large # a cache of its own: the fill must miss
  cd "$work/large-1/$app"
  peak "kustomize build" "" "$kz" build .
  peak "cmp generate --no-cache" "" "$tl" cmp generate --no-cache
  peak "cmp generate (cache miss: fill)" cached=false "$tl" cmp generate
  cd "$work"
  new_commit "$work/large-1" "$work/large-2"
  cd "$work/large-2/$app"
  ARGOCD_APP_REVISION=rev-2 peak "cmp generate (warm cache)" cached=true "$tl" cmp generate
  cd "$work"
fi
echo "== $(uptime)"
