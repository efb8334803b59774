#!/usr/bin/env bash
# hack/release.sh THROUGHLINE IMAGE_REF VERSION [DEPLOY_DIR]: pin the throughline
# image of every install bundle under DEPLOY_DIR (default deploy) to the index
# `make image` just built, with `throughline pin --set` (no registry asked, no
# sed), then render each bundle with `throughline render` (the project's own
# policy; any refusal fails the release). Called by `make release`.
#
# Without IMAGE_REPO the bundles keep the name ghcr.io/throughline-dev/throughline
# and get newTag "VERSION@<index digest>". With IMAGE_REPO=host/repo[:tag] (the
# repository `make image` pushed to; the tag defaults to VERSION) the release
# first asks that registry for the tag (`throughline resolve`) and refuses when
# its digest is not the one in IMAGE_REF; the bundles then name host/repo
# (newName) with that tag and digest.
#
# With SIGNING_KEY=path (a PEM private key; cosign's encrypted keys with
# SIGNING_KEY_PASSWORD or COSIGN_PASSWORD) the release then signs the index
# and attests its CycloneDX SBOM (`go run ./hack/image sign`): the Sigstore
# bundles land in IMAGE_DIR (default bin/image) and, with IMAGE_REPO, next to
# the index in its registry (OCI 1.1 referrers and cosign's tags). Without
# SIGNING_KEY it says so and signs nothing (docs/release.md).
set -euo pipefail
tl=$1 ref_file=$2 version=$3 deploy=${4:-deploy}
image=ghcr.io/throughline-dev/throughline

ref=$(<"$ref_file")
digest=${ref##*@}
[[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] || { echo "release: $ref_file: no sha256 digest in '$ref'" >&2; exit 1; }
[[ $version =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || { echo "release: '$version' is not a valid image tag" >&2; exit 1; }

target=$image tag=$version
if [[ -n ${IMAGE_REPO:-} ]]; then
	pushed=$IMAGE_REPO
	[[ ${pushed##*/} == *:* ]] || pushed=$pushed:$version
	target=${pushed%:*} tag=${pushed##*:}
	[[ ${ref%@*} == "$target" ]] || { echo "release: $ref_file names $ref, not the repository $target of IMAGE_REPO=$IMAGE_REPO: run make image with this IMAGE_REPO" >&2; exit 1; }
	json=$("$tl" resolve -o json "$pushed") || { echo "release: cannot resolve $pushed (pushed by make image?)" >&2; exit 1; }
	got=$(grep -m1 -oE '"digest": "sha256:[0-9a-f]{64}"' <<<"$json" | grep -oE 'sha256:[0-9a-f]{64}') || true
	[[ $got == "$digest" ]] || { echo "release: refused: the registry says $pushed is ${got:-no digest}, but make image built $digest ($ref_file)" >&2; exit 1; }
	echo "resolved $pushed: $got (the digest in $ref_file)"
fi
set_ref=$target:$tag@$digest

for b in argocd serve; do
	"$tl" pin --root "$deploy" --set "$image=$set_ref" "$deploy/$b"
done

# Render every bundle through policy. The argocd Component is rendered on
# hack/argocd-stand-in, as cmd/throughline's tests and e2e/install do.
for b in crds flux serve; do
	out=$("$tl" render --root "$deploy" "$deploy/$b")
	if [[ $b == serve ]] && ! grep -qF "image: $set_ref" <<<"$out"; then
		echo "release: $deploy/serve does not render $set_ref" >&2
		exit 1
	fi
	echo "rendered $deploy/$b: passes policy"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/argocd"
cp -R "$deploy/argocd" "$tmp/throughline"
cp "$(dirname "${BASH_SOURCE[0]}")/argocd-stand-in/repo-server.yaml" "$tmp/argocd/"
printf 'resources: [repo-server.yaml]\ncomponents: [../throughline]\n' >"$tmp/argocd/kustomization.yaml"
out=$("$tl" render --root "$tmp" "$tmp/argocd")
grep -qF "image: $set_ref" <<<"$out" || { echo "release: $deploy/argocd does not render $set_ref" >&2; exit 1; }
echo "rendered $deploy/argocd (on a stand-in argocd-repo-server): passes policy"

# The optional ServiceMonitor Component, on the serve bundle.
cp -R "$deploy/serve" "$tmp/serve"
mkdir -p "$tmp/monitored"
printf 'resources: [../serve]\ncomponents: [../serve/servicemonitor]\n' >"$tmp/monitored/kustomization.yaml"
out=$("$tl" render --root "$tmp" "$tmp/monitored")
grep -qF "kind: ServiceMonitor" <<<"$out" || { echo "release: $deploy/serve/servicemonitor renders no ServiceMonitor" >&2; exit 1; }
echo "rendered $deploy/serve with components: [servicemonitor]: passes policy"

# Sign the index and attest its SBOM: last, once everything above passed.
if [[ -z ${SIGNING_KEY:-} ]]; then
	echo "release: no SIGNING_KEY: $ref is NOT signed and carries no SBOM attestation (make release SIGNING_KEY=path/to/key)" >&2
	exit 0
fi
[[ -r $SIGNING_KEY ]] || { echo "release: SIGNING_KEY=$SIGNING_KEY: no such readable file" >&2; exit 1; }
push=()
[[ -n ${IMAGE_REPO:-} ]] && push=(-push)
"${GO:-go}" run ./hack/image sign -key "$SIGNING_KEY" -ref "$ref_file" -dir "${IMAGE_DIR:-$(dirname "$ref_file")/image}" "${push[@]}"
