#!/usr/bin/env bash
# Builds Argo CD's multi-call `argocd` binary (run it with
# ARGOCD_BINARY_NAME=argocd-notifications for the notifications controller) and
# copies the Application, AppProject and ApplicationSet CRDs of the same
# release into a version-keyed cache dir; prints that dir: <dir>/argocd,
# <dir>/crds/*.yaml. The same binary runs as argocd-applicationset-controller
# (ARGOCD_BINARY_NAME=argocd-applicationset-controller).
#
# Argo CD cannot be built as a dependency (its go.mod replaces k8s.io/* and
# more), so the module source from the proxy is copied to a scratch dir and
# built there with its own go.mod: ~4.5 min and 2.3 GB of memory cold.
#
#   export THROUGHLINE_ARGOCD_DIR=$(hack/argocd.sh)
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ARGOCD_VERSION=${ARGOCD_VERSION:-2.14.21}
MAJOR=${ARGOCD_VERSION%%.*}
MOD=github.com/argoproj/argo-cd/v$MAJOR
OUT=$(cache_dir argocd "$ARGOCD_VERSION")

CRDS="application-crd.yaml appproject-crd.yaml applicationset-crd.yaml"
done_already() {
  [ -x "$OUT/argocd" ] || return 1
  for c in $CRDS; do [ -f "$OUT/crds/$c" ] || return 1; done
}
if done_already; then echo "$OUT"; exit 0; fi
lock_cache "$OUT"
if done_already; then echo "$OUT"; exit 0; fi

# A cache built before the ApplicationSet CRD was kept: add the CRDs only
# (the module source is in the Go module cache; no rebuild).
if [ -x "$OUT/argocd" ]; then
  scratch_module argocd-crds
  SRC=$(go mod download -json "$MOD@v$ARGOCD_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -d "$SRC/manifests/crds" ] || { log "module source of $MOD@v$ARGOCD_VERSION not found"; exit 1; }
  mkdir -p "$OUT/crds"
  for c in $CRDS; do
    [ -f "$OUT/crds/$c" ] && continue
    cp "$SRC/manifests/crds/$c" "$OUT/crds/$c.tmp" && chmod 644 "$OUT/crds/$c.tmp" && mv "$OUT/crds/$c.tmp" "$OUT/crds/$c"
  done
  log "added the CRDs to $OUT"
  echo "$OUT"; exit 0
fi

log "building argocd v$ARGOCD_VERSION into $OUT (takes ~5 min cold)"
scratch_module argocd
SRC=$(go mod download -json "$MOD@v$ARGOCD_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[ -d "$SRC/cmd" ] || { log "module source of $MOD@v$ARGOCD_VERSION not found"; exit 1; }
cp -r "$SRC" src
chmod -R u+w src
cd src
rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp/crds"
V=$MOD/common
go build -trimpath -ldflags "-s -w -X $V.version=$ARGOCD_VERSION -X $V.gitTreeState=clean" -o "$OUT.tmp/argocd" ./cmd >&2
for c in $CRDS; do cp "manifests/crds/$c" "$OUT.tmp/crds/"; done
finish_cache "$OUT"
echo "$OUT"
