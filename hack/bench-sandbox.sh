#!/usr/bin/env bash
# The render sandbox's cost on a cold render of the example's production
# overlay (docs/benchmarks.md, "Render confinement"), two ways:
# 1. paired whole-process runs: throughline built at BASE (before the
#    sandbox) and at the working tree, `render --hash` alternated by
#    hyperfine, BENCH_RUNS runs each, BENCH_ROUNDS rounds;
# 2. what confining costs inside the child: the sandbox report's `took`,
#    logged at debug level, over the same number of renders.
#
#   hack/bench-sandbox.sh BASE        (e.g. 5c5aa91)
set -euo pipefail
base=${1:?usage: bench-sandbox.sh BASE-COMMIT}
runs=${BENCH_RUNS:-20}
rounds=${BENCH_ROUNDS:-3}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add -q --detach "$tmp/base" "$base"
(cd "$tmp/base" && GOFLAGS=-buildvcs=false go build -trimpath -o "$tmp/old" ./cmd/throughline)
GOFLAGS=-buildvcs=false go build -trimpath -o "$tmp/new" ./cmd/throughline
args="render --hash --root examples/gitops-env examples/gitops-env/apps/checkout/overlays/production"
for r in $(seq "$rounds"); do
  echo "== round $r"
  hyperfine -N --warmup 3 --runs "$runs" --export-json "$tmp/round$r.json" \
    -n before "$tmp/old $args" -n sandboxed "$tmp/new $args" >/dev/null
  for n in before sandboxed; do
    jq -r --arg n "$n" '.results[] | select(.command == $n) | "\(.command): median \(.median * 1000 | floor) ms, mean \(.mean * 1000 | floor) ms"' "$tmp/round$r.json" 2>/dev/null ||
      python3 -c "import json,sys; [print(f\"{x['command']}: median {x['median']*1000:.1f} ms\") for x in json.load(open('$tmp/round$r.json'))['results'] if x['command']=='$n']"
  done
done
echo "== confining, inside the child ($runs renders)"
for _ in $(seq "$runs"); do
  "$tmp/new" $args --log-level debug --log-format json 2>&1 >/dev/null | grep -o '"took":[0-9.]*' | cut -d: -f2
done | sort -n | awk '{v[NR]=$1} END {printf "took (ms): min %.2f, median %.2f, max %.2f\n", v[1], v[int((NR+1)/2)], v[NR]}'
