#!/usr/bin/env bash
# hack/release.sh THROUGHLINE IMAGE_REF VERSION: pin the throughline image of
# every install bundle under deploy/ to the index `make image` just built, then
# render each bundle with `throughline render` (the project's own policy; any
# refusal fails the release). Called by `make release`.
#
# The pin is one marked line per bundle kustomization (deploy/argocd,
# deploy/serve):
#     newTag: "<version>@sha256:<digest>" # throughline-release-pin
# rewritten with sed; a bundle without exactly one marked line fails.
set -euo pipefail
tl=$1 ref_file=$2 version=$3
image=ghcr.io/throughline-dev/throughline

ref=$(<"$ref_file")
digest=${ref##*@}
[[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] || { echo "release: $ref_file: no sha256 digest in '$ref'" >&2; exit 1; }
[[ $version =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || { echo "release: '$version' is not a valid image tag" >&2; exit 1; }
tag="$version@$digest"

for k in deploy/argocd/kustomization.yaml deploy/serve/kustomization.yaml; do
	n=$(grep -c '# throughline-release-pin$' "$k" || true)
	[[ $n == 1 ]] || { echo "release: $k: want exactly one '# throughline-release-pin' line, found $n" >&2; exit 1; }
	sed -i -E "s|^( *newTag: )\"[^\"]*\"( # throughline-release-pin)$|\1\"$tag\"\2|" "$k"
	grep -q "newTag: \"$tag\" # throughline-release-pin$" "$k" || { echo "release: $k: the pin was not written" >&2; exit 1; }
	echo "pinned $k: $image:$tag"
done

# Render every bundle through policy. The argocd Component is rendered on a
# stand-in argocd-repo-server, as cmd/throughline's tests do.
for b in crds flux serve; do
	"$tl" render --root deploy "deploy/$b" >/dev/null
	echo "rendered deploy/$b: passes policy"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/argocd"
cp -R deploy/argocd "$tmp/throughline"
printf 'resources: [repo-server.yaml]\ncomponents: [../throughline]\n' >"$tmp/argocd/kustomization.yaml"
cat >"$tmp/argocd/repo-server.yaml" <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: argocd-repo-server}
spec:
  selector: {matchLabels: {app: repo}}
  template:
    metadata: {labels: {app: repo}}
    spec:
      containers:
        - name: argocd-repo-server
          image: quay.io/argoproj/argocd:v2.14.21@sha256:0000000000000000000000000000000000000000000000000000000000000000
      volumes:
        - {name: var-files, emptyDir: {}}
        - {name: plugins, emptyDir: {}}
YAML
out=$("$tl" render --root "$tmp" "$tmp/argocd")
grep -qF "image: $image:$tag" <<<"$out" || { echo "release: deploy/argocd does not render $image:$tag" >&2; exit 1; }
echo "rendered deploy/argocd (on a stand-in argocd-repo-server): passes policy"
