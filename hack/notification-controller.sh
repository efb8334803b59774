#!/usr/bin/env bash
# Builds Flux's notification-controller from the Go module proxy and copies its
# CRDs (config/crd/bases of the same module) into a version-keyed cache dir;
# prints that dir:  <dir>/notification-controller, <dir>/crds/*.yaml.
# ~5 min cold on 2 cores.
#
#   export THROUGHLINE_NC_DIR=$(hack/notification-controller.sh)
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NC_VERSION=${NC_VERSION:-1.9.0}  # the proxy serves only some tags (no @v/list); v1.9.0 is one
OUT=$(cache_dir notification-controller "$NC_VERSION")

done_already() { [ -x "$OUT/notification-controller" ] && [ -d "$OUT/crds" ]; }
if done_already; then echo "$OUT"; exit 0; fi
lock_cache "$OUT"
if done_already; then echo "$OUT"; exit 0; fi

log "building notification-controller v$NC_VERSION into $OUT (takes ~5 min cold)"
scratch_module notification-controller
# sum.golang.org has no entry for this module's tags; the proxy still serves them.
export GONOSUMDB=github.com/fluxcd/notification-controller
# v1.9.0 requires a gopkg.in/yaml.v3 pseudo-version the proxy no longer serves.
printf 'module local/nc\n\ngo 1.26.0\n\nreplace gopkg.in/yaml.v3 => gopkg.in/yaml.v3 v3.0.1\n' > go.mod
go get -tool "github.com/fluxcd/notification-controller@v$NC_VERSION" >&2
rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"
go build -trimpath -ldflags "-s -w" -o "$OUT.tmp/notification-controller" github.com/fluxcd/notification-controller >&2
SRC=$(go list -m -f '{{.Dir}}' github.com/fluxcd/notification-controller)
cp -r "$SRC/config/crd/bases" "$OUT.tmp/crds"
chmod -R u+w "$OUT.tmp/crds"
finish_cache "$OUT"
echo "$OUT"
