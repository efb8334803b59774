#!/usr/bin/env bash
# Whole-process wall time of a warm hit of `throughline-cmp generate`
# through the resident renderer (`throughline cmp serve`) against the same
# hit in-process (throughline-cmp executes throughline-cmp-render, which
# reads and verifies the entry from the disk cache), and against the hit
# through the resident renderer by throughline-cmp-render itself (the
# whole render path linked, as throughline-cmp was before it became a thin
# client: "resident-render"; and its in-process hit run directly, without
# the client's start and exec: "in-process-render"), on the benchmark overlay (internal/benchfixture through
# hack/benchtree) at 20, 500 and 2,000 Deployments. The hit is from a new
# commit: a fresh copy of the repository with an unrelated file changed.
# Runs are paired (resident, in-process, resident, ...) and the medians
# printed, with the CPU time per hit: the plugin's (user + system, from
# wait4) and, for the resident renderer, the server's share (its CPU time
# over the runs, from /proc, divided by the runs). The load average is
# printed beside each size: on a shared machine the paired ratio and the
# CPU time are the fair figures. Figures in docs/benchmarks.md.
#
#   hack/bench-resident.sh BIN_DIR     (BIN_DIR holds throughline, throughline-cmp and throughline-cmp-render: make build)
#
# Environment: BENCH_SIZES ("20 500 2000"), BENCH_RUNS (20).
set -euo pipefail

bin=$(cd "${1:?usage: bench-resident.sh BIN_DIR}" && pwd)
sizes=${BENCH_SIZES:-20 500 2000}
runs=${BENCH_RUNS:-20}
work=$(mktemp -d "${TMPDIR:-/tmp}/tlr-bench.XXXXXX")
serve_pid=
cleanup() { [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
go build -o "$work/benchtree" "$(cd "$(dirname "$0")" && pwd)/benchtree"
app=apps/bench/overlays/production
export HOME=$work/home ARGOCD_APP_NAME=bench-production ARGOCD_APP_SOURCE_PATH=$app
mkdir -p "$HOME"

for n in $sizes; do
  root=$work/n$n
  "$work/benchtree" -n "$n" "$root/c1"
  cp -r "$root/c1" "$root/c2"
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {revision: "2"}\n' >"$root/c2/apps/other/configmap.yaml"
  cache=$root/cache
  # The fill is not timed: a generous render budget for a loaded machine.
  (cd "$root/c1/$app" && THROUGHLINE_RENDER_BUDGET=10m THROUGHLINE_CACHE_DIR=$cache "$bin/throughline-cmp" generate --log-level error >/dev/null)
  sock=$root/sock
  mkdir -m 0700 "$sock"
  "$bin/throughline" cmp serve --dir "$sock" --cache-dir "$cache" --metrics-addr "" --log-level warn &
  serve_pid=$!
  for _ in $(seq 100); do [ -S "$sock/render.sock" ] && break; sleep 0.05; done
  echo "deployments=$n load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  BENCH_SERVE_PID=$serve_pid BENCH_N=$n BENCH_RUNS=$runs BENCH_DIR=$root/c2/$app BENCH_CACHE=$cache BENCH_SOCK=$sock BENCH_BIN=$bin python3 - <<'PY'
import os, resource, statistics, subprocess, time
n, runs, d = os.environ["BENCH_N"], int(os.environ["BENCH_RUNS"]), os.environ["BENCH_DIR"]
tick = os.sysconf("SC_CLK_TCK")
def server_cpu():
    f = open("/proc/%s/stat" % os.environ["BENCH_SERVE_PID"]).read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in f[11:15]) / tick  # utime, stime, cutime, cstime (its render children)
plugin = os.path.join(os.environ["BENCH_BIN"], "throughline-cmp")
renderer = os.path.join(os.environ["BENCH_BIN"], "throughline-cmp-render")
base = dict(os.environ, THROUGHLINE_CACHE_DIR=os.environ["BENCH_CACHE"])
res = dict(base, THROUGHLINE_RESIDENT_DIR=os.environ["BENCH_SOCK"])
variants = {"resident": (plugin, res), "resident-render": (renderer, res), "in-process": (plugin, base),
            "in-process-render": (renderer, base)}
times = {k: [] for k in variants}
cpu = {k: [] for k in variants}
served = {k: 0.0 for k in variants}
outs = {}
for i in range(runs + 2):
    for k, (exe, env) in variants.items():
        r0, s0 = resource.getrusage(resource.RUSAGE_CHILDREN), server_cpu()
        t = time.perf_counter()
        p = subprocess.run([exe, "generate"], cwd=d, env=env, capture_output=True)
        dt = time.perf_counter() - t
        r1, s1 = resource.getrusage(resource.RUSAGE_CHILDREN), server_cpu()
        via_resident = k.startswith("resident")
        if p.returncode != 0 or b"cached=true" not in p.stderr or via_resident != (b"resident=true" in p.stderr):
            raise SystemExit(f"{k}: exit {p.returncode}: {p.stderr.decode()[-400:]}")
        outs.setdefault(k, p.stdout)
        if i >= 2:  # two warm-up rounds
            times[k].append(dt * 1000)
            cpu[k].append((r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1000)
            served[k] += s1 - s0
assert len(set(outs.values())) == 1, "outputs differ"
for k, v in times.items():
    extra = f" + server {served[k] * 1000 / runs:5.1f} ms" if k.startswith("resident") else ""
    print(f"deployments={n} {k:15s} median {statistics.median(v):7.1f} ms  min {min(v):7.1f}  max {max(v):7.1f}  "
          f"cpu median {statistics.median(cpu[k]):6.1f} ms{extra}  ({runs} runs)")
print(f"deployments={n} resident/in-process: median {statistics.median(times['resident']) / statistics.median(times['in-process']):.2f}; "
      f"resident/resident-render: {statistics.median(times['resident']) / statistics.median(times['resident-render']):.2f}")
PY
  echo "deployments=$n load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
  kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true; serve_pid=
done
