# shellcheck shell=bash
# Shared helpers for the hack/ asset scripts. Source it; do not run it.
#
# Every asset lands in ${THROUGHLINE_CACHE:-$HOME/.cache/throughline}/<name>-<version>.
# A script builds into <dir>.tmp and renames it at the end, so a directory that
# exists is complete; a second run returns at once. Concurrent runs of the same
# script wait for each other on <dir>.lock (flock).

THROUGHLINE_CACHE=${THROUGHLINE_CACHE:-$HOME/.cache/throughline}
case $THROUGHLINE_CACHE in /*) ;; *) THROUGHLINE_CACHE=$PWD/$THROUGHLINE_CACHE ;; esac

# Go builds for tools: no VCS stamping, no toolchain download, small binaries.
export GOFLAGS=-buildvcs=false GOTOOLCHAIN=local

log() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }

# cache_dir NAME VERSION: prints the final directory of an asset.
cache_dir() { printf '%s/%s-%s\n' "$THROUGHLINE_CACHE" "$1" "$2"; }

# lock_cache DIR: holds an exclusive lock on DIR.lock for the rest of the script.
lock_cache() {
  mkdir -p "$(dirname "$1")"
  exec 9>"$1.lock"
  if ! flock -n 9; then
    log "waiting for another build of $1"
    flock 9
  fi
}

# finish_cache DIR: publishes DIR.tmp as DIR (atomic rename).
finish_cache() {
  rm -rf "$1"
  mv "$1.tmp" "$1"
}

# scratch_module NAME: creates a throw-away module dir (removed on exit) and cds into it.
scratch_module() {
  SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/throughline-$1.XXXXXX")
  trap 'chmod -R u+w "$SCRATCH" 2>/dev/null; rm -rf "$SCRATCH"' EXIT
  cd "$SCRATCH"
}

# k8s_module NAME K8S_VERSION: writes go.mod of a scratch module that can build
# commands of k8s.io/kubernetes vK8S_VERSION. k8s.io/kubernetes replaces its
# staging modules with ./staging/...; a consumer must replace them with the
# published v0.<minor>.<patch> versions instead.
k8s_module() {
  local staging=v0.${2#1.} kmod
  kmod=$(go mod download -json "k8s.io/kubernetes@v$2" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  {
    printf 'module local/%s\n\ngo 1.26.0\n\nreplace (\n' "$1"
    sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\t\1 => \1 '"$staging"'#p' "$kmod"
    printf ')\n'
  } > go.mod
}

# k8s_ldflags K8S_VERSION: the -ldflags that stamp a Kubernetes command's version.
k8s_ldflags() {
  local v=k8s.io/component-base/version minor=${1#1.}
  minor=${minor%%.*}
  printf '%s' "-s -w -X $v.gitVersion=v$1 -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
}
