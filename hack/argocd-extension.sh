#!/usr/bin/env bash
# Builds the Argo CD UI extension (ui/argocd-extension) with npm and esbuild:
#   ui/argocd-extension/dist/extension-throughline.js   the bundle Argo CD loads
#   ui/argocd-extension/dist/testhost.js                 React for e2e/argocdext's stand-in page (not shipped)
#   bin/argocd-extension/extension-throughline.tar       resources/ as argocd-extension-installer unpacks it
#   bin/argocd-extension/extension-throughline_checksums.txt  its sha256 (EXTENSION_CHECKSUM_URL)
# npm ci runs only when package-lock.json changed since the last install (it
# needs the npm registry; the build itself is offline). The tarball is
# reproducible: sorted, mtime 0, owner 0.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v npm >/dev/null || { echo "argocd-extension: no npm (apt-get install nodejs npm)" >&2; exit 1; }
ext=ui/argocd-extension
if [ ! -f "$ext/node_modules/.package-lock.json" ] || [ "$ext/package-lock.json" -nt "$ext/node_modules/.package-lock.json" ]; then
  (cd "$ext" && npm ci --no-audit --no-fund --loglevel=error)
fi
(cd "$ext" && npm run --silent build)
out=bin/argocd-extension
rm -rf "$out"
mkdir -p "$out/stage/resources/extension-throughline"
cp "$ext/dist/extension-throughline.js" "$out/stage/resources/extension-throughline/"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$out/stage" -cf "$out/extension-throughline.tar" resources
rm -rf "$out/stage"
(cd "$out" && sha256sum extension-throughline.tar >extension-throughline_checksums.txt)
echo "argocd-extension: $ext/dist/extension-throughline.js ($(wc -c <"$ext/dist/extension-throughline.js") bytes), $out/extension-throughline.tar" >&2
