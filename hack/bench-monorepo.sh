#!/usr/bin/env bash
# The lean plugin's figures (issue 17; docs/benchmarks.md, "Lean plugin"):
#
#   hack/bench-monorepo.sh [KUSTOMIZE_BIN]        (default bin/kustomize: make bin/kustomize)
#
# 1. One app (the tree of hack/benchtree, N Deployments): start-up
#    (`generate --help`) and, at BENCH_SMALL and BENCH_LARGE Deployments,
#    `kustomize build`, `throughline-cmp generate --no-cache` (cold),
#    `throughline-cmp generate` with a warm cache (a fresh copy of the
#    repository with an unrelated file changed, as Argo CD streams a new
#    commit) and `throughline cmp generate` warm (the one big binary, for
#    comparison): hyperfine, BENCH_ROUNDS rounds in alternating order, pooled
#    medians; then peak RSS of each (/usr/bin/time -v, the whole process tree's
#    largest, as wait4 reports it).
# 2. The monorepo: BENCH_APPS apps x 3 environments (hack/benchmonorepo:
#    5 to 500 objects per app, median ~16), every render one process in a
#    fresh copy of the app with the plugin's environment, as
#    argocd-cmp-server starts it: `kustomize build` of all, then
#    throughline-cmp with an empty cache (cold), the same commit again
#    (warm, BENCH_WARM_ROUNDS times), a commit that changes one app (its 3
#    renders miss, every other hits), and `throughline cmp generate` warm.
#    Then the same through the resident renderer (issue 36): `throughline
#    cmp serve` over a cache of its own, `throughline-cmp generate` with
#    THROUGHLINE_RESIDENT_DIR: the cold pass, the same commit again, and
#    the pass after the one-app commit, that one also by
#    throughline-cmp-render (the whole render path linked, as the plugin
#    was before throughline-cmp became a thin client); each pass's CPU
#    includes the server's (benchmonorepo run -server-pid). Last, the floor of a
#    process per render: an empty Go program started for every render.
#
# Environment: BENCH_APPS (300), BENCH_SMALL (20), BENCH_LARGE (2000; 0
# skips it), BENCH_RUNS (hyperfine runs per round, 10), BENCH_LARGE_RUNS (3),
# BENCH_ROUNDS (2), BENCH_WARM_ROUNDS (3), BENCH_SINGLE=0 / BENCH_MONOREPO=0
# skip a part, BENCH_INPROCESS=0 skips the in-process passes of part 2
# (only kustomize and the resident renderer), BENCH_OUT (keep the results
# there). A full run takes about
# 20 minutes on 2 cores; run it alone (flock /tmp/throughline-heavy.lock).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
top=$PWD
kz=${1:-$top/bin/kustomize}
apps=${BENCH_APPS:-300}
small=${BENCH_SMALL:-20}
large=${BENCH_LARGE:-2000}
runs=${BENCH_RUNS:-10}
large_runs=${BENCH_LARGE_RUNS:-3}
rounds=${BENCH_ROUNDS:-2}
warm_rounds=${BENCH_WARM_ROUNDS:-3}

for t in hyperfine /usr/bin/time python3 "$kz"; do
  command -v "$t" >/dev/null || { echo "bench-monorepo: $t is missing (apt-get install -y hyperfine time python3; make bin/kustomize)" >&2; exit 1; }
done
kz=$(cd "$(dirname "$kz")" && pwd)/$(basename "$kz")
work=$(mktemp -d "${TMPDIR:-/tmp}/throughline-bench-monorepo.XXXXXX")
trap 'rm -rf "$work"' EXIT
out=${BENCH_OUT:-$work/out}
mkdir -p "$out" "$work/bin"

# The binaries as make build builds them, with one stamped version.
export GOFLAGS=-buildvcs=false
go build -trimpath -ldflags '-s -w -X main.version=bench' -o "$work/bin/" ./cmd/throughline ./cmd/throughline-cmp ./cmd/throughline-cmp-render
go build -o "$work/bin/" ./hack/benchtree ./hack/benchmonorepo
# The floor of a process per render: a Go program that only writes a
# document separator (benchmonorepo wants something on stdout).
mkdir -p "$work/empty"
printf 'package main\n\nimport "os"\n\nfunc main() { _, _ = os.Stdout.WriteString("---\\n") }\n' >"$work/empty/main.go"
printf 'module empty\n\ngo 1.26\n' >"$work/empty/go.mod"
(cd "$work/empty" && go build -trimpath -ldflags '-s -w' -o "$work/bin/empty" .)
lean=$work/bin/throughline-cmp
big=$work/bin/throughline

echo "== machine: $(nproc) cores; $(uptime)"
echo "== $("$kz" version 2>/dev/null | head -1); throughline-cmp $("$lean" version); $(go version)"
export ARGOCD_APP_REVISION=rev-1 ARGOCD_APP_SOURCE_REPO_URL=https://git.example.test/bench.git

# pooled JSON...: pooled medians of hyperfine exports, ratios to the first command.
pooled() {
  python3 - "$@" <<'EOF'
import json, statistics, sys
times, cpu, order = {}, {}, []
for f in sys.argv[1:]:
    for x in json.load(open(f))["results"]:
        if x["command"] not in times:
            order.append(x["command"])
        times.setdefault(x["command"], []).extend(x["times"])
        cpu.setdefault(x["command"], []).extend([x["user"] + x["system"]] * len(x["times"]))
ref = order[0]
for name in order:
    t, c = times[name], cpu[name]
    print("  %-34s n=%3d  median %8.1f ms  min %8.1f ms  cpu mean %8.1f ms  |  median %.3fx  cpu %.3fx %s"
          % (name, len(t), 1e3 * statistics.median(t), 1e3 * min(t), 1e3 * statistics.mean(c),
             statistics.median(t) / statistics.median(times[ref]), statistics.mean(c) / statistics.mean(cpu[ref]), ref))
EOF
}

# hyper NAME RUNS CMDNAME CMD ...: ROUNDS hyperfine rounds, the order reversed
# every other round, pooled.
hyper() {
  local name=$1 n=$2 r
  shift 2
  local -a cmds=("$@") rev=()
  for ((r = ${#cmds[@]} - 2; r >= 0; r -= 2)); do rev+=("${cmds[r]}" "${cmds[r + 1]}"); done
  local -a args
  for ((r = 1; r <= rounds; r++)); do
    args=()
    local -a use=("${cmds[@]}")
    ((r % 2 == 0)) && use=("${rev[@]}")
    for ((i = 0; i < ${#use[@]}; i += 2)); do args+=(--command-name "${use[i]}" "${use[i + 1]}"); done
    hyperfine --shell=none --warmup 1 --runs "$n" --style none --export-json "$out/$name-$r.json" "${args[@]}" >/dev/null 2>>"$out/hyperfine-warnings.txt"
  done
  echo "-- $name: pooled over $rounds rounds ($(uptime | sed 's/.*load/load/'))"
  local -a files=()
  for ((r = 1; r <= rounds; r++)); do files+=("$out/$name-$r.json"); done
  pooled "${files[@]}"
}

# peak NAME WANT CMD...: one run, max RSS and wall; WANT (cached=true or
# cached=false) must appear in throughline's log when set.
peak() {
  local name=$1 want=$2 log
  shift 2
  log=$out/time-$(echo "$name" | tr -cs 'a-z0-9' '-' | sed 's/-$//').txt
  /usr/bin/time -v "$@" >/dev/null 2>"$log" || { echo "bench-monorepo: $name failed:" >&2; tail -20 "$log" >&2; exit 1; }
  if [ -n "$want" ] && ! grep -q "$want" "$log"; then echo "bench-monorepo: $name: want $want in its log" >&2; exit 1; fi
  awk -v n="$name" -F': ' '/Maximum resident set size/ {rss = $2} /Elapsed \(wall clock\)/ {wall = $2}
    END {printf "  %-44s peak RSS %7.1f MiB  wall %s\n", n, rss / 1024, wall}' "$log"
}

single() { # N RUNS
  local n=$1 r=$2 app=apps/bench/overlays/production
  echo "== 1. one app, $n Deployments"
  "$work/bin/benchtree" -n "$n" "$work/one-$n-a"
  cp -r "$work/one-$n-a" "$work/one-$n-b"
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {revision: "2"}\n' >"$work/one-$n-b/apps/other/configmap.yaml"
  export ARGOCD_APP_SOURCE_PATH=$app ARGOCD_APP_NAME=bench-production THROUGHLINE_CACHE_DIR=$work/cache-one-$n
  # Fill both binaries' caches from the first commit; hit them from the next.
  (cd "$work/one-$n-a/$app" && "$lean" generate >/dev/null 2>&1 && "$big" cmp generate >/dev/null 2>&1)
  cd "$work/one-$n-b/$app"
  "$lean" generate 2>&1 >/dev/null | grep -q cached=true || { echo "bench-monorepo: no cache hit at $n" >&2; exit 1; }
  local got
  got=$("$lean" generate 2>/dev/null | grep -c '^{"apiVersion":"apps/v1","kind":"Deployment",' || true)
  [ "$got" = "$n" ] || { echo "bench-monorepo: throughline-cmp rendered $got Deployments, want $n" >&2; exit 1; }
  hyper "warm-$n" "$runs" "kustomize build" "$kz build ." \
    "throughline-cmp generate (warm)" "$lean generate" "throughline cmp generate (warm)" "$big cmp generate"
  hyper "cold-$n" "$r" "kustomize build" "$kz build ." "throughline-cmp generate --no-cache" "$lean generate --no-cache"
  echo "-- peak memory, $n Deployments (/usr/bin/time -v)"
  peak "kustomize build" "" "$kz" build .
  peak "throughline-cmp generate --no-cache" "" "$lean" generate --no-cache
  peak "throughline-cmp generate (warm)" cached=true "$lean" generate
  peak "throughline (one binary) cmp generate, warm" cached=true "$big" cmp generate
  cd "$top"
}

if [ "${BENCH_SINGLE:-1}" != 0 ]; then
  echo "== 0. start-up: print the help"
  hyper startup "$((runs * 3))" "kustomize build --help" "$kz build --help" \
    "throughline-cmp generate --help" "$lean generate --help" "throughline cmp generate --help" "$big cmp generate --help"
  single "$small" "$runs"
  if [ "$large" -gt 0 ]; then single "$large" "$large_runs"; fi
fi

if [ "${BENCH_MONOREPO:-1}" != 0 ]; then
  repo=$work/monorepo
  echo "== 2. monorepo: $("$work/bin/benchmonorepo" gen -apps "$apps" "$repo")"
  export THROUGHLINE_CACHE_DIR=$work/cache-monorepo BENCH_REVISION=rev-1
  unset ARGOCD_APP_SOURCE_PATH ARGOCD_APP_NAME
  m=$out/monorepo.jsonl
  : >"$m"
  mono() { "$work/bin/benchmonorepo" run -repo "$repo" -json "$m" -label "$@"; }
  echo "-- load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  mono "kustomize build" -- "$kz" build .
  if [ "${BENCH_INPROCESS:-1}" != 0 ]; then
    mono "throughline-cmp, empty cache (cold)" -- "$lean" generate
    for ((r = 1; r <= warm_rounds; r++)); do
      BENCH_REVISION=rev-1 mono "throughline-cmp, same commit (warm $r)" -- "$lean" generate
    done
  fi
  # The resident renderer, over a cache of its own.
  sock=$work/resident
  mkdir -m 0700 "$sock"
  THROUGHLINE_CACHE_DIR=$work/cache-resident "$big" cmp serve --dir "$sock" --metrics-addr "" --log-level warn &
  serve_pid=$!
  trap 'kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
  for _ in $(seq 100); do [ -S "$sock/render.sock" ] && break; sleep 0.05; done
  echo "-- load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  monores() { THROUGHLINE_RESIDENT_DIR=$sock mono "$@"; }
  monores "resident, empty cache (cold)" -server-pid "$serve_pid" -- "$lean" generate
  for ((r = 1; r <= warm_rounds; r++)); do
    BENCH_REVISION=rev-1 monores "resident, same commit (warm $r)" -server-pid "$serve_pid" -- "$lean" generate
  done
  "$work/bin/benchmonorepo" change -app app-001 -revision 2 "$repo"
  echo "-- load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  if [ "${BENCH_INPROCESS:-1}" != 0 ]; then
    BENCH_REVISION=rev-2 mono "throughline-cmp, one app changed" -- "$lean" generate
    BENCH_REVISION=rev-2 mono "throughline cmp generate, warm" -- "$big" cmp generate
  fi
  BENCH_REVISION=rev-2 monores "resident, one app changed" -server-pid "$serve_pid" -- "$lean" generate
  BENCH_REVISION=rev-2 monores "resident via throughline-cmp-render" -server-pid "$serve_pid" -- "$work/bin/throughline-cmp-render" generate
  kill "$serve_pid"
  wait "$serve_pid" 2>/dev/null || true
  mono "empty Go program (the floor)" -- "$work/bin/empty"
  echo "-- load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
  python3 - "$m" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
k = rows[0]
print("-- totals against kustomize build of every app (%d renders, %.1f s wall, %.1f s CPU):" % (k["renders"], k["wallS"], k["cpuS"]))
for r in rows[1:]:
    print("  %-40s %4d cached %4d resident  wall %8.2f s = %.4fx (1/%.0f)  cpu %8.2f s = %.4fx (1/%.0f; server %.2f s)"
          "  per render median %6.1f ms  peak RSS %6.1f MiB (kustomize %.1f)"
          % (r["label"], r["cached"], r.get("resident", 0), r["wallS"], r["wallS"] / k["wallS"], k["wallS"] / r["wallS"],
             r["cpuS"], r["cpuS"] / k["cpuS"], k["cpuS"] / r["cpuS"], r.get("serverCpuS", 0), r["medianMs"],
             r["maxRssMiB"], k["maxRssMiB"]))
EOF
fi
echo "== $(uptime)"
