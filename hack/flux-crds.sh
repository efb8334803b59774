#!/usr/bin/env bash
# Copies Flux's Kustomization CRD (config/crd/bases of the kustomize-controller
# module, the same release as the kustomize-controller/api the project uses)
# into a version-keyed cache dir and prints that dir. Seconds: a module download.
#
#   export THROUGHLINE_FLUX_CRDS=$(hack/flux-crds.sh)
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KC_VERSION=${KC_VERSION:-1.9.6}  # v1.10.x needs Go 1.27
OUT=$(cache_dir flux-crds "$KC_VERSION")

done_already() { [ -f "$OUT/kustomize.toolkit.fluxcd.io_kustomizations.yaml" ]; }
if done_already; then echo "$OUT"; exit 0; fi
lock_cache "$OUT"
if done_already; then echo "$OUT"; exit 0; fi

export GONOSUMDB=github.com/fluxcd/kustomize-controller
SRC=$(go mod download -json "github.com/fluxcd/kustomize-controller@v$KC_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[ -d "$SRC/config/crd/bases" ] || { log "no config/crd/bases in $SRC"; exit 1; }
rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"
cp "$SRC"/config/crd/bases/*.yaml "$OUT.tmp/"
chmod -R u+w "$OUT.tmp"
finish_cache "$OUT"
echo "$OUT"
