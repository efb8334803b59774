#!/usr/bin/env bash
# Builds Flux's source-controller and kustomize-controller from the Go module
# proxy and copies their CRDs (config/crd/bases of the same modules) into a
# version-keyed cache dir; prints that dir:
#   <dir>/source-controller, <dir>/kustomize-controller, <dir>/crds/*.yaml
# ~6 min cold on 2 cores shared with other builds (docs/harness.md, Timings).
#
#   export THROUGHLINE_FLUX_CONTROLLERS_DIR=$(hack/flux-controllers.sh)
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# source-controller v1.9.4 to v1.9.6 do not build here: the proxy refuses the
# fluxcd/pkg/artifact versions they need. kustomize-controller v1.10.x needs Go 1.27.
SC_VERSION=${SC_VERSION:-1.9.3}
KC_VERSION=${KC_VERSION:-1.9.6}
OUT=$(cache_dir flux-controllers "sc$SC_VERSION-kc$KC_VERSION")

done_already() {
  [ -x "$OUT/source-controller" ] && [ -x "$OUT/kustomize-controller" ] && [ -d "$OUT/crds" ]
}
if done_already; then echo "$OUT"; exit 0; fi
lock_cache "$OUT"
if done_already; then echo "$OUT"; exit 0; fi

rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp/crds"
# module_replaces GOMOD: the versioned replace directives of a go.mod as
# old=new@version (local-path ones, like ./api, are skipped). A dependency's
# replace lines do not apply to the module that requires it, yet the controllers
# need them (e.g. go-digest for go-digest/blake3): the scratch module copies them.
module_replaces() {
  awk '
    /^replace \(/ { blk = 1; next }
    blk && /^\)/ { blk = 0; next }
    {
      line = $0; sub(/\/\/.*/, "", line); sub(/^[ \t]+/, "", line)
      if (!((blk || line ~ /^replace /) && line ~ /=>/)) next
      sub(/^replace /, "", line); n = split(line, a, /[ \t]+/)
      for (i = 1; i <= n; i++) if (a[i] == "=>") arrow = i
      old = a[1]; if (arrow == 3) old = a[1] "@" a[2]
      if (a[arrow + 2] != "") print old "=" a[arrow + 1] "@" a[arrow + 2]
    }' "$1"
}
# build NAME VERSION: one controller in its own scratch module (their
# dependency graphs differ; one module would force one set of versions on both).
build() {
  local name=$1 version=$2 mod=github.com/fluxcd/$1 src
  log "building $name v$version into $OUT (takes ~2.5 min cold)"
  (
    scratch_module "$name"
    # sum.golang.org has no entry for these modules' tags; the proxy still serves them.
    export GONOSUMDB=$mod
    printf 'module local/%s\n\ngo 1.26.0\n' "$name" > go.mod
    # The module zip omits the nested api module: take it at the same version.
    go mod edit -replace "$mod/api=$mod/api@v$version"
    gomod=$(go mod download -json "$mod@v$version" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    for r in $(module_replaces "$gomod"); do go mod edit -replace "$r"; done
    go get -tool "$mod@v$version" >&2
    go build -trimpath -ldflags "-s -w" -o "$OUT.tmp/$name" "$mod" >&2
    src=$(go list -m -f '{{.Dir}}' "$mod")
    cp "$src"/config/crd/bases/*.yaml "$OUT.tmp/crds/"
  )
}
build source-controller "$SC_VERSION"
build kustomize-controller "$KC_VERSION"
chmod -R u+w "$OUT.tmp"
printf 'source-controller v%s\nkustomize-controller v%s\n' "$SC_VERSION" "$KC_VERSION" > "$OUT.tmp/VERSIONS"
finish_cache "$OUT"
echo "$OUT"
