#!/usr/bin/env bash
# Copies the CRDs of the admission policies deploy/admission ships (Kyverno's
# ImageValidatingPolicy, Sigstore policy-controller's ClusterImagePolicy) from
# their Go modules into a version-keyed cache dir and prints that dir. Seconds:
# two module downloads. e2e/admission creates the policies against them on a
# real kube-apiserver with strict field validation.
#
#   export THROUGHLINE_ADMISSION_CRDS=$(hack/admission-crds.sh)
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KYVERNO_VERSION=${KYVERNO_VERSION:-1.15.2}        # ImageValidatingPolicy policies.kyverno.io/v1alpha1
POLICY_CONTROLLER_VERSION=${POLICY_CONTROLLER_VERSION:-0.13.0}  # ClusterImagePolicy with signatureFormat
OUT=$(cache_dir admission-crds "kyverno$KYVERNO_VERSION-pc$POLICY_CONTROLLER_VERSION")

done_already() { [ -f "$OUT/imagevalidatingpolicies.yaml" ] && [ -f "$OUT/clusterimagepolicies.yaml" ]; }
if done_already; then echo "$OUT"; exit 0; fi
lock_cache "$OUT"
if done_already; then echo "$OUT"; exit 0; fi

dir() { go mod download -json "$1" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p'; }
KY=$(dir "github.com/kyverno/kyverno@v$KYVERNO_VERSION")
PC=$(dir "github.com/sigstore/policy-controller@v$POLICY_CONTROLLER_VERSION")
rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"
cp "$KY/config/crds/policies.kyverno.io/policies.kyverno.io_imagevalidatingpolicies.yaml" "$OUT.tmp/imagevalidatingpolicies.yaml"
cp "$PC/config/300-clusterimagepolicy.yaml" "$OUT.tmp/clusterimagepolicies.yaml"
chmod -R u+w "$OUT.tmp"
finish_cache "$OUT"
echo "$OUT"
