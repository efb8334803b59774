#!/usr/bin/env bash
# make fuzz: run every Go fuzz target for FUZZTIME (default 30s), one after the
# other. The targets are discovered with `go test -list '^Fuzz'`, so a new
# FuzzXxx in any package is run without editing this script or the Makefile.
#
# usage: hack/fuzz.sh [PACKAGES...]   (default ./...; GO and FUZZTIME from the environment)
set -euo pipefail
go=${GO:-go}
fuzztime=${FUZZTIME:-30s}
(($#)) || set -- ./...

# go test -list prints a package's matching test names, then one line
# "ok <import path> <time>" for it ("?" for a package without test files).
# A package that does not build fails here, and so does the script.
list=$("$go" test -run '^$' -list '^Fuzz' "$@")
targets=() names=()
while IFS= read -r line; do
  case $line in
    Fuzz*) names+=("$line") ;;
    ok[[:space:]]*)
      read -r _ pkg _ <<<"$line"
      for name in ${names[@]+"${names[@]}"}; do targets+=("$pkg $name"); done
      names=()
      ;;
  esac
done <<<"$list"

if ((${#targets[@]} == 0)); then
  echo "fuzz.sh: no fuzz targets in $*" >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} fuzz target(s), $fuzztime each"
for target in "${targets[@]}"; do
  read -r pkg name <<<"$target"
  echo "== $name ($pkg)"
  "$go" test -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" "$pkg"
done
