#!/usr/bin/env bash
# bench-helm.sh: issue 18's CLI pair. A chart app of 200 templates (a
# Deployment each, through a helper and the values; the chart of
# render.BenchmarkChartApp200Templates) rendered by
#   - `helm template`, Helm's CLI built from the module version throughline
#     links (helm.sh/helm/v4 in go.mod),
#   - `throughline render` (the CLI: Helm's SDK in process),
#   - `throughline-cmp generate --no-cache` (the plugin, cold: the chart is
#     rendered in a child process of the throughline binary),
#   - `throughline-cmp generate` with a warm cache (a new commit elsewhere).
# hyperfine, ROUNDS rounds in alternating order, pooled medians.
#
#   flock /tmp/throughline-heavy.lock hack/bench-helm.sh   # about 3 min (+4 min to build Helm the first time)
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=${GOTOOLCHAIN:-local} GOFLAGS=-buildvcs=false
rounds=${ROUNDS:-2} runs=${RUNS:-20}
work=$(mktemp -d /tmp/bench-helm.XXXXXX)
trap 'rm -rf "$work"' EXIT
command -v hyperfine >/dev/null || { echo "bench-helm: needs hyperfine (apt-get install -y hyperfine)" >&2; exit 1; }

# Helm's CLI of the module version in go.mod, built once into the cache.
version=$(go list -m -f '{{.Version}}' helm.sh/helm/v4)
helm=${XDG_CACHE_HOME:-$HOME/.cache}/throughline/helm-$version/helm
if [ ! -x "$helm" ]; then
  mkdir -p "$work/helmcli" "$(dirname "$helm")"
  cp go.mod go.sum "$work/helmcli/"
  (cd "$work/helmcli" && go mod edit -module helmcli &&
    GOFLAGS=-mod=mod go build -trimpath -ldflags '-s -w' -o "$helm.tmp" helm.sh/helm/v4/cmd/helm)
  mv "$helm.tmp" "$helm"
fi
go build -trimpath -ldflags '-s -w -X main.version=bench' -o "$work/bin/" ./cmd/throughline ./cmd/throughline-cmp ./cmd/throughline-cmp-render
tl=$work/bin/throughline lean=$work/bin/throughline-cmp

# The repository: the chart app in apps/big, another app to change.
repo=$work/repo-a
mkdir -p "$repo/apps/big/templates" "$repo/apps/other"
printf 'apiVersion: v2\nname: big\nversion: 1.0.0\n' >"$repo/apps/big/Chart.yaml"
printf 'replicas: 2\nimage: registry.example.test/app@sha256:%064d\n' 0 >"$repo/apps/big/values.yaml"
printf '{{- define "big.labels" -}}\napp.kubernetes.io/instance: {{ .Release.Name }}\n{{- end -}}\n' \
  >"$repo/apps/big/templates/_helpers.tpl"
for i in $(seq -w 0 199); do
  cat >"$repo/apps/big/templates/d$i.yaml" <<YAML
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-$i
  labels:
    {{- include "big.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: d$i}
  template:
    metadata:
      labels: {app: d$i}
    spec:
      containers:
        - name: app
          image: {{ .Values.image | quote }}
YAML
done
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {revision: "1"}\n' >"$repo/apps/other/configmap.yaml"
cp -r "$repo" "$work/repo-b"
sed -i 's/revision: "1"/revision: "2"/' "$work/repo-b/apps/other/configmap.yaml"

export ARGOCD_APP_NAME=big ARGOCD_APP_NAMESPACE=big ARGOCD_APP_REVISION=rev-1 ARGOCD_APP_SOURCE_PATH=apps/big
export ARGOCD_APP_SOURCE_REPO_URL=https://git.example.test/bench.git THROUGHLINE_CACHE_DIR=$work/cache
(cd "$repo/apps/big" && "$lean" generate >/dev/null)
cd "$work/repo-b/apps/big"
"$lean" generate 2>&1 >/dev/null | grep -q cached=true || { echo "bench-helm: no cache hit" >&2; exit 1; }
[ "$("$helm" template big . | grep -c '^kind: Deployment')" = 200 ] || { echo "bench-helm: helm rendered no 200 Deployments" >&2; exit 1; }
n=$("$lean" generate --no-cache 2>"$work/err" | grep -c "^{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\"" || true); [ "$n" = 200 ] || { echo "bench-helm: throughline-cmp rendered $n Deployments, want 200" >&2; cat "$work/err" >&2; exit 1; }

echo "== machine: $(nproc) cores; $(uptime)"
echo "== helm $version ($("$helm" version --short 2>/dev/null)); $(go version)"
declare -A times
for ((r = 1; r <= rounds; r++)); do
  cmds=(--command-name "helm template" "$helm template big . --namespace big"
    --command-name "throughline render" "$tl render ."
    --command-name "throughline-cmp generate --no-cache" "$lean generate --no-cache"
    --command-name "throughline-cmp generate (warm)" "$lean generate")
  if ((r % 2 == 0)); then
    cmds=("${cmds[@]:6:3}" "${cmds[@]:3:3}" "${cmds[@]:9:3}" "${cmds[@]:0:3}")
  fi
  hyperfine --shell=none --warmup 2 --runs "$runs" --style none --export-json "$work/h-$r.json" "${cmds[@]}" >/dev/null
done
python3 - "$work"/h-*.json <<'PY'
import json, statistics, sys
t, c = {}, {}
for f in sys.argv[1:]:
    for x in json.load(open(f))["results"]:
        t.setdefault(x["command"], []).extend(x["times"])
        c.setdefault(x["command"], []).extend([x["user"] + x["system"]] * len(x["times"]))
ref = "helm template"
for n in ["helm template", "throughline render", "throughline-cmp generate --no-cache", "throughline-cmp generate (warm)"]:
    print("  %-38s n=%3d  median %7.1f ms  cpu %7.1f ms  |  %.3fx helm template (cpu %.3fx)" % (
        n, len(t[n]), 1e3 * statistics.median(t[n]), 1e3 * statistics.mean(c[n]),
        statistics.median(t[n]) / statistics.median(t[ref]), statistics.mean(c[n]) / statistics.mean(c[ref])))
PY
echo "== $(uptime)"
