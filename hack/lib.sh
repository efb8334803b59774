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
