#!/usr/bin/env bash
# Builds Sigstore's cosign CLI from the Go module proxy into a version-keyed
# cache dir and prints the binary's path (e2e/supplychain verifies the
# notifier's verification summaries with it: cosign verify-attestation).
#
#   export THROUGHLINE_COSIGN_BIN=$(hack/cosign.sh)
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

COSIGN_VERSION=${COSIGN_VERSION:-3.1.3}
OUT=$(cache_dir cosign "$COSIGN_VERSION")

done_already() { [ -x "$OUT/cosign" ]; }
if done_already; then echo "$OUT/cosign"; exit 0; fi
lock_cache "$OUT"
if done_already; then echo "$OUT/cosign"; exit 0; fi

log "building cosign v$COSIGN_VERSION into $OUT"
scratch_module cosign
# cosign's own go.mod decides the versions of its dependencies (go install
# module@version, outside any module).
rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"
GOBIN="$OUT.tmp" go install -trimpath \
  -ldflags "-s -w -X sigs.k8s.io/release-utils/version.gitVersion=v$COSIGN_VERSION" \
  "github.com/sigstore/cosign/v3/cmd/cosign@v$COSIGN_VERSION" >&2
finish_cache "$OUT"
echo "$OUT/cosign"
