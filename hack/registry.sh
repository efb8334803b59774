#!/usr/bin/env bash
# Installs Debian's docker-registry (CNCF distribution) and htpasswd (apache2-utils)
# when missing and prints the path of the docker-registry binary.
#
# Only the binary is used: the Go helper (internal/testenv.StartRegistry) writes
# its own config (127.0.0.1, filesystem storage, delete enabled, optional
# htpasswd). The package's default config listens on :5000 with a broken
# htpasswd path; nothing here starts the packaged service.
#
#   export THROUGHLINE_REGISTRY_BIN=$(hack/registry.sh)
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if ! command -v docker-registry >/dev/null || ! command -v htpasswd >/dev/null; then
  if [ "$(id -u)" != 0 ]; then
    log "docker-registry or htpasswd missing; run as root or: sudo apt-get install -y --no-install-recommends docker-registry apache2-utils"
    exit 1
  fi
  log "installing docker-registry and apache2-utils with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  # The package's postinst may try to start its service; keep it from doing so.
  POLICY=/usr/sbin/policy-rc.d
  if [ ! -e "$POLICY" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$POLICY"; chmod +x "$POLICY"
    trap 'rm -f "$POLICY"' EXIT
  fi
  apt-get update -qq >&2 || true
  apt-get install -y -qq --no-install-recommends docker-registry apache2-utils >&2
fi
command -v docker-registry
