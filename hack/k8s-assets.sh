#!/usr/bin/env bash
# Builds kube-apiserver and etcd from the Go module proxy into a version-keyed
# cache dir and prints that dir (usable as KUBEBUILDER_ASSETS for envtest).
# No Debian package ships kube-apiserver and envtest's binary download is not
# reachable here, so the binaries come from source: ~11 min cold on 2 cores.
#
#   export KUBEBUILDER_ASSETS=$(hack/k8s-assets.sh)
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

K8S_VERSION=${K8S_VERSION:-1.37.2}   # k8s.io/kubernetes v$K8S_VERSION
ETCD_VERSION=${ETCD_VERSION:-3.7.0}  # go.etcd.io/etcd/server/v3 (k8s 1.37 pins the 3.7.0 client)
OUT=$(cache_dir k8s "$K8S_VERSION-etcd-$ETCD_VERSION")

done_already() { [ -x "$OUT/kube-apiserver" ] && [ -x "$OUT/etcd" ]; }
if done_already; then echo "$OUT"; exit 0; fi
lock_cache "$OUT"
if done_already; then echo "$OUT"; exit 0; fi

log "building kube-apiserver v$K8S_VERSION and etcd v$ETCD_VERSION into $OUT (takes ~11 min cold)"
scratch_module k8s-assets
k8s_module k8s-assets "$K8S_VERSION"
go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@v$K8S_VERSION" "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >&2

rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"
go build -trimpath -ldflags "$(k8s_ldflags "$K8S_VERSION")" -o "$OUT.tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2
go build -trimpath -ldflags "-s -w" -o "$OUT.tmp/etcd" go.etcd.io/etcd/server/v3 >&2
finish_cache "$OUT"
echo "$OUT"
