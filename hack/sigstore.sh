#!/usr/bin/env bash
# Builds a private Sigstore from the Go module proxy: Fulcio (certificates
# for OIDC identities), Rekor v2 (rekor-tiles, its POSIX backend) and the
# timestamp authority, into a version-keyed cache dir, and prints that dir
# (it holds fulcio, rekor-server and timestamp-server). e2e/supplychain
# signs the notifier's verification summaries keyless against them.
#
#   export THROUGHLINE_SIGSTORE_DIR=$(hack/sigstore.sh)
#
# The three mains are built by ONE `go build` in one scratch module, so the
# dependencies they share (grpc, sigstore, cloud SDKs) compile once; Go's
# minimal version selection may raise a dependency above what one of them
# pins (the build would say so if that broke it).
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FULCIO_VERSION=${FULCIO_VERSION:-1.8.5}
REKOR_TILES_VERSION=${REKOR_TILES_VERSION:-2.3.0}
TSA_VERSION=${TSA_VERSION:-2.1.3}
OUT=$(cache_dir sigstore "fulcio$FULCIO_VERSION-rekortiles$REKOR_TILES_VERSION-tsa$TSA_VERSION")

done_already() { [ -x "$OUT/fulcio" ] && [ -x "$OUT/rekor-server" ] && [ -x "$OUT/timestamp-server" ]; }
if done_already; then echo "$OUT"; exit 0; fi
lock_cache "$OUT"
if done_already; then echo "$OUT"; exit 0; fi

log "building fulcio v$FULCIO_VERSION, rekor-tiles v$REKOR_TILES_VERSION (posix), timestamp-authority v$TSA_VERSION into $OUT"
scratch_module sigstore
printf 'module local/sigstore\n\ngo 1.26.0\n' > go.mod
pkgs=(
  github.com/sigstore/fulcio
  github.com/sigstore/rekor-tiles/v2/cmd/rekor-server/posix
  github.com/sigstore/timestamp-authority/v2/cmd/timestamp-server
)
go get "${pkgs[0]}@v$FULCIO_VERSION" "${pkgs[1]}@v$REKOR_TILES_VERSION" "${pkgs[2]}@v$TSA_VERSION" >&2
rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"
go build -trimpath -ldflags "-s -w" -o "$OUT.tmp/" "${pkgs[@]}" >&2
# go build names a binary after its package's last path element.
mv "$OUT.tmp/posix" "$OUT.tmp/rekor-server"
finish_cache "$OUT"
echo "$OUT"
