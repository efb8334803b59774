#!/usr/bin/env bash
# Copies the Prometheus Operator's ServiceMonitor CRD (example/prometheus-operator-crd
# of the github.com/prometheus-operator/prometheus-operator module zip, 4 MB)
# into a version-keyed cache dir and prints that dir. Seconds: a module download.
# e2e/install dry-runs deploy/serve/servicemonitor against it.
#
#   export THROUGHLINE_PROMETHEUS_CRDS=$(hack/prometheus-crds.sh)
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PO_VERSION=${PO_VERSION:-0.85.0}
OUT=$(cache_dir prometheus-crds "$PO_VERSION")
CRD=monitoring.coreos.com_servicemonitors.yaml

done_already() { [ -f "$OUT/$CRD" ]; }
if done_already; then echo "$OUT"; exit 0; fi
lock_cache "$OUT"
if done_already; then echo "$OUT"; exit 0; fi

export GONOSUMDB=github.com/prometheus-operator/prometheus-operator
SRC=$(go mod download -json "github.com/prometheus-operator/prometheus-operator@v$PO_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[ -f "$SRC/example/prometheus-operator-crd/$CRD" ] || { log "no example/prometheus-operator-crd/$CRD in $SRC"; exit 1; }
rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"
cp "$SRC/example/prometheus-operator-crd/$CRD" "$OUT.tmp/"
chmod -R u+w "$OUT.tmp"
finish_cache "$OUT"
echo "$OUT"
