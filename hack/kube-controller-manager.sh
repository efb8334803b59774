#!/usr/bin/env bash
# Builds kube-controller-manager from the Go module proxy, at the same version
# as kube-apiserver (hack/k8s-assets.sh), into its own version-keyed cache dir
# and prints the binary's path. A dir of its own, so that adding it did not
# change the key of the kube-apiserver/etcd dir (a warm machine keeps those).
# The real deployment, replicaset, garbage-collector, namespace and
# service-account controllers of the e2e suites (internal/testenv/controllermanager.go).
# Cold: 15 min on 2 cores with an empty Go build cache, machine loaded by other
# builds (docs/harness.md, Timings); 105 MB.
#
#   export THROUGHLINE_KCM_BIN=$(hack/kube-controller-manager.sh)
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

K8S_VERSION=${K8S_VERSION:-1.37.2}   # k8s.io/kubernetes v$K8S_VERSION, as hack/k8s-assets.sh
OUT=$(cache_dir kcm "$K8S_VERSION")

done_already() { [ -x "$OUT/kube-controller-manager" ]; }
if done_already; then echo "$OUT/kube-controller-manager"; exit 0; fi
lock_cache "$OUT"
if done_already; then echo "$OUT/kube-controller-manager"; exit 0; fi

log "building kube-controller-manager v$K8S_VERSION into $OUT (takes ~15 min cold)"
scratch_module kcm
k8s_module kcm "$K8S_VERSION"
go get -tool "k8s.io/kubernetes/cmd/kube-controller-manager@v$K8S_VERSION" >&2

rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"
go build -trimpath -ldflags "$(k8s_ldflags "$K8S_VERSION")" \
  -o "$OUT.tmp/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager >&2
finish_cache "$OUT"
echo "$OUT/kube-controller-manager"
