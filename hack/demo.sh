#!/usr/bin/env bash
# The README's first command: render the example environments, print their
# rendered hashes and declared digests, then show the refusals of the bad
# overlays: unpinned images, and a plaintext Secret (whose value is never shown);
# then the second app, storefront, a Helm chart pinned by digest, and a refused
# unpinned chart. No network, no cluster: the pinned chart comes from a
# throwaway chart cache seeded with the OCI layout committed beside the
# example (CHARTS, default REPO/../charts/oci; examples/charts/README.md).
# Last, the walk (hack/demochain, built beside THROUGHLINE by make demo; or
# DEMOCHAIN): one digest from CI to production through the real CLI, a
# loopback registry and the notifier's handler, in a copy of REPO left
# behind in bin/demo-chain (DEMO_CHAIN_DIR).
set -uo pipefail
tl=${1:?usage: demo.sh THROUGHLINE REPO [CHARTS]}
repo=${2:?usage: demo.sh THROUGHLINE REPO [CHARTS]}
charts=${3:-$(dirname "$repo")/charts/oci}
# The demo reads JSON with python3 and builds a throwaway Git copy: without
# them it would print false answers, so it stops first, naming what to install.
for need in git:git python3:python3 ssh-keygen:openssh-client; do
  if ! command -v "${need%%:*}" >/dev/null; then
    echo "demo.sh: ${need%%:*} is not installed (Debian: apt-get install ${need#*:}); the demo needs git, python3 and ssh-keygen" >&2
    exit 1
  fi
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say() { printf '\n%s\n' "$*"; }
# digests ENV prints the sorted, unique digests the ENV overlay declares.
digests() {
  "$tl" render --log-level warn --root "$repo" -o json "$repo/apps/checkout/overlays/$1" |
    python3 -c 'import json,sys; print("\n".join(sorted({c["digest"] for o in json.load(sys.stdin)["items"] if o["kind"]=="Acceptance" for w in o["spec"]["workloads"] for c in w["containers"]})))'
}

for env in staging production; do
  app=$repo/apps/checkout/overlays/$env
  say "== $env: throughline render --root $repo $app"
  out=$("$tl" render --log-level warn --root "$repo" -o json "$app") || exit 1
  hash=$("$tl" render --log-level warn --root "$repo" --hash "$app") || exit 1
  echo "rendered hash:   $hash"
  echo "$out" | python3 -c '
import json, sys
for o in json.load(sys.stdin)["items"]:
    if o["kind"] != "Acceptance":
        continue
    for w in o["spec"]["workloads"]:
        for c in w["containers"]:
            print("declared digest: %s  %s/%s %s (%s)" % (c["digest"], w["kind"], w["name"], c["name"], c["image"].split("@")[0]))
    rc = o["spec"].get("checks") or {}
    for c in rc.get("checks", []):
        kind = next(k for k in ("prometheus", "http", "job") if k in c)
        what = {"prometheus": lambda p: "%s %s" % (p["op"], p["threshold"]), "http": lambda h: "%s:%s%s" % (h["service"]["name"], h["service"]["port"], h["path"]),
                "job": lambda j: j["image"]}[kind](c[kind])
        print("runtime check:   %-12s %-10s %s (soak %s)" % (c["name"], kind, what, rc.get("soak", "0s")))
'
done

say "== the same artifact? staging and production must declare the same digests"
if [ "$(digests staging)" = "$(digests production)" ]; then
  echo "yes: $(digests staging | tr '\n' ' ')(their replicas, hosts and resources differ, so their rendered hashes differ)"
else
  echo "no: staging and production declare different digests" >&2; exit 1
fi

bad=$repo/apps/checkout/overlays/refused-unpinned
say "== refused: throughline render --root $repo $bad"
"$tl" render --log-level warn --root "$repo" "$bad" >/dev/null
code=$?
echo "exit code: $code (3 = refused by policy; nothing was printed on stdout)"
[ "$code" -eq 3 ] || { echo "demo: expected exit 3 for $bad" >&2; exit 1; }

sec=$repo/apps/checkout/overlays/refused-secret
needle=demo-only-not-a-real-password # the Secret's value in $sec/db-credentials.yaml
say "== refused: throughline render --root $repo $sec"
errs=$("$tl" render --log-level warn --root "$repo" "$sec" 2>&1 >/dev/null)
code=$?
printf '%s\n' "$errs"
echo "exit code: $code (3 = refused by policy: a Secret with stringData; the value is not printed)"
[ "$code" -eq 3 ] || { echo "demo: expected exit 3 for $sec" >&2; exit 1; }
case $errs in *"$needle"*) echo "demo: the refusal printed the Secret's value" >&2; exit 1 ;; esac

# The chart cache (keyed by digest, verified on every read) seeded from the
# committed OCI layout: the render verifies the pinned manifest digest and the
# chart layer's digest as after a pull from the registry, and fetches nothing.
export THROUGHLINE_CACHE_DIR=$work/cache
python3 - "$charts" "$THROUGHLINE_CACHE_DIR/charts" <<'PY' || exit 1
import json, os, shutil, sys
src, cache = sys.argv[1], sys.argv[2]
manifests = {m["digest"] for m in json.load(open(os.path.join(src, "index.json")))["manifests"]}
for name in os.listdir(os.path.join(src, "blobs", "sha256")):
    kind = "manifests" if "sha256:" + name in manifests else "blobs"
    os.makedirs(os.path.join(cache, kind, "sha256"), exist_ok=True)
    shutil.copy(os.path.join(src, "blobs", "sha256", name), os.path.join(cache, kind, "sha256", name))
PY
for env in staging production; do
  app=$repo/apps/storefront/overlays/$env
  say "== storefront (a Helm chart app) in $env: throughline render --root $repo $app"
  hash=$("$tl" render --log-level warn --root "$repo" --hash "$app") || exit 1
  echo "rendered hash:   $hash"
  python3 - "$app" <<'PY'
import json, os, re, sys
app = sys.argv[1]
lock = open(os.path.join(app, "throughline-charts.lock.yaml")).read()
get = lambda k: re.search(r"^\s*-?\s*%s: (\S+)" % k, lock, re.M).group(1)
print("chart:           %s %s from %s, pinned %s" % (get("name"), get("version"), get("repo"), get("digest")))
params = open(os.path.join(app, "throughline-helm.yaml")).read()
print("parameters:      " + ", ".join(l.split("#")[0].strip() for l in params.splitlines()
      if re.match(r"^(releaseName|namespace|valueFiles):", l)) + " (throughline-helm.yaml, in Git)")
PY
  "$tl" render --log-level warn --root "$repo" -o json "$app" | python3 -c '
import json, sys
for o in json.load(sys.stdin)["items"]:
    if o["kind"] == "Acceptance":
        for w in o["spec"]["workloads"]:
            for c in w["containers"]:
                print("declared digest: %s  %s/%s %s (%s)" % (c["digest"], w["kind"], w["name"], c["name"], c["image"].split("@")[0]))
' || exit 1
done

app=$repo/apps/storefront/overlays/staging
say "== the Argo CD plugin renders the same chart app to the same hash (throughline cmp generate, as the sidecar runs it)"
plugin() {
  (cd "$app" && env ARGOCD_APP_NAME=storefront-staging ARGOCD_APP_NAMESPACE=storefront-staging ARGOCD_APP_SOURCE_PATH=apps/storefront/overlays/staging \
    ARGOCD_APP_SOURCE_REPO_URL=https://git.example.test/platform/gitops-env.git KUBE_VERSION=1.31.0 PARAM_ENVIRONMENT=staging PARAM_APP=storefront \
    "$@" "$tl" cmp generate --log-level warn)
}
phash=$(plugin | python3 -c 'import json,sys; print(json.loads(sys.stdin.read().split("\n---\n")[-1])["spec"]["renderedHash"])') || exit 1
echo "plugin's hash:   $phash"
[ "$phash" = "$("$tl" render --log-level warn --root "$repo" --hash "$app")" ] || { echo "demo: the plugin's hash differs from the CLI's" >&2; exit 1; }
echo "the CLI's hash:  the same (every gate renders what Argo CD applies)"
say "== refused: an Application whose Helm parameters disagree with throughline-helm.yaml"
echo 'spec.source.plugin.parameters: [{name: valueFiles, array: [values-production.yaml]}]'
errs=$(plugin ARGOCD_APP_PARAMETERS='[{"name":"valueFiles","array":["values-production.yaml"]}]' 2>&1 >/dev/null)
code=$?
printf '%s\n' "$errs"
echo "exit code: $code (3 = refused, rule chart-parameters-disagree: the parameters live in Git)"
[ "$code" -eq 3 ] || { echo "demo: expected exit 3 for the disagreeing parameters" >&2; exit 1; }

bad=$repo/apps/storefront/overlays/refused-unpinned-chart
say "== refused: throughline render --root $repo $bad (a chart version the repository does not pin)"
errs=$("$tl" render --log-level warn --root "$repo" "$bad" 2>&1 >/dev/null)
code=$?
printf '%s\n' "$errs"
echo "exit code: $code (3 = refused, rule unpinned-chart: nothing was fetched)"
[ "$code" -eq 3 ] || { echo "demo: expected exit 3 for $bad" >&2; exit 1; }

# The promotion gates work on a Git repository: a throwaway one made from
# the example (no remote, nothing pushed).
cp -r "$repo" "$work/gitops"
g() { git -C "$work/gitops" -c user.name=demo -c user.email=demo@example.test -c commit.gpgsign=false "$@"; }
g init -q -b main && g add -A && g commit -q -m "the example" || exit 1

say "== refused: a promotion to an environment the registry does not know, over production's overlay"
echo "throughline promote propose --app checkout --from staging --to qa --path apps/checkout/overlays/production"
errs=$("$tl" promote propose --log-level warn --repo "$work/gitops" --app checkout --from staging --to qa \
  --path apps/checkout/overlays/production 2>&1 >/dev/null)
code=$?
printf '%s\n' "$errs"
echo "exit code: $code (3 = refused: environments are the registry in throughline-policy.yaml, not free text)"
[ "$code" -eq 3 ] || { echo "demo: expected exit 3 for the qa promotion" >&2; exit 1; }

say "== refused: the every-PR check of a change that copies staging's overlay over production's"
g checkout -q -b copy-staging && cp "$work/gitops/apps/checkout/overlays/staging/"*.yaml "$work/gitops/apps/checkout/overlays/production/" &&
  g commit -q -am "copy staging over production" || exit 1
echo "throughline check --base main --head copy-staging"
"$tl" check --log-level warn --repo "$work/gitops" --base main --head copy-staging 2>/dev/null
code=$?
echo "exit code: $code (3 = refused: production is protected, its render changes only through a promotion record)"
[ "$code" -eq 3 ] || { echo "demo: expected exit 3 for the copied overlay" >&2; exit 1; }

say "== refused: the every-PR check of a change that re-points production's Application at a fork"
app=$work/gitops/clusters/production/checkout.yaml
g checkout -q -b repoint main && sed -i 's#repoURL: https://git.example.test/platform/gitops-env.git#repoURL: https://github.com/attacker/fork.git#' "$app" &&
  g commit -q -am "production reads a fork" || exit 1
echo "throughline check --base main --head repoint"
out=$("$tl" check --log-level warn --repo "$work/gitops" --base main --head repoint 2>/dev/null)
code=$?
printf '%s\n' "$out" | grep '^REFUSED'
echo "exit code: $code (3 = refused: production's controllers are bound to the repository its registry entry names)"
[ "$code" -eq 3 ] || { echo "demo: expected exit 3 for the re-pointed Application" >&2; exit 1; }

say "== approved: a change to what judges production (its scans at most 12h old, not 24h) needs two signed approvals"
# Production's approvers sign with their own SSH keys; the example's
# allowed-signers holds example public keys, so the demo makes its own pair
# for alice and bob and commits them on its main first.
for who in alice bob; do
  ssh-keygen -q -t ed25519 -N '' -C "$who@example.com" -f "$work/$who" || exit 1
  echo "$who@example.com namespaces=\"git\" $(cut -d' ' -f1,2 "$work/$who.pub")"
done >"$work/gitops/allowed-signers"
g checkout -q main && g commit -q -am "the demo's approvers' keys" || exit 1
g checkout -q -b fresher-scans main && sed -i '/^  production:/,$ s/maxAge: 24h/maxAge: 12h/' "$work/gitops/throughline-policy.yaml" &&
  g commit -q -am "production: scans at most 12h old" && g checkout -q main || exit 1
echo "throughline check --base main --head fresher-scans"
out=$("$tl" check --log-level warn --repo "$work/gitops" --base main --head fresher-scans 2>/dev/null)
code=$?
printf '%s\n' "$out" | grep -E '^what judges production|^  throughline-policy.yaml|^REFUSED'
echo "exit code: $code (3 = refused: what judges production changes only with its approvers' signed approvals of the change)"
[ "$code" -eq 3 ] || { echo "demo: expected exit 3 for the unapproved policy change" >&2; exit 1; }
for who in alice bob; do
  echo "throughline policy approve --environment production --branch fresher-scans --base main --expires 24h   # as $who, signing with $who's key"
  GIT_CONFIG_COUNT=2 GIT_CONFIG_KEY_0=user.signingkey GIT_CONFIG_VALUE_0="$work/$who" GIT_CONFIG_KEY_1=gpg.format GIT_CONFIG_VALUE_1=ssh \
    GIT_AUTHOR_NAME=$who GIT_AUTHOR_EMAIL=$who@example.com GIT_COMMITTER_NAME=$who GIT_COMMITTER_EMAIL=$who@example.com \
    "$tl" policy approve --log-level warn --repo "$work/gitops" --environment production --branch fresher-scans --base main --expires 24h \
    >"$work/approve.out" || exit 1
  # its first line; read whole first: head(1) closing the pipe early would
  # fail the command with SIGPIPE when it writes on
  head -1 "$work/approve.out"
done
echo "throughline check --base main --head fresher-scans"
out=$("$tl" check --log-level warn --repo "$work/gitops" --base main --head fresher-scans 2>/dev/null)
code=$?
printf '%s\n' "$out" | grep -E '^what judges production|^OK'
echo "exit code: $code (0 = passed: two of production's approvers signed this exact change)"
[ "$code" -eq 0 ] || { printf '%s\n' "$out" >&2; echo "demo: expected exit 0 for the approved policy change" >&2; exit 1; }

say "== refused: the every-PR check of a change to staging while the policy freezes it (windows and freezes, docs/promotion.md)"
from=$(date -u -d '-1 hour' +%Y-%m-%dT%H:%M:%SZ) until=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
g checkout -q main && sed -i "/^  staging:/a\\    freezes:\\n      - {name: launch, from: \"$from\", until: \"$until\", reason: the launch weekend}" \
  "$work/gitops/throughline-policy.yaml" && g commit -q -am "staging frozen for the launch" || exit 1
g checkout -q -b more-replicas main && sed -i 's/count: 2/count: 3/' "$work/gitops/apps/checkout/overlays/staging/kustomization.yaml" &&
  g commit -q -am "staging: three replicas" && g checkout -q main || exit 1
echo "throughline check --base main --head more-replicas"
out=$("$tl" check --log-level warn --repo "$work/gitops" --base main --head more-replicas 2>/dev/null)
code=$?
printf '%s\n' "$out" | grep '^REFUSED frozen'
echo "exit code: $code (3 = refused: staging takes no change until the freeze ends; the next opening is named)"
[ "$code" -eq 3 ] && printf '%s\n' "$out" | grep -q '^REFUSED frozen' || { printf '%s\n' "$out" >&2; echo "demo: expected exit 3 (frozen) for the change in the freeze" >&2; exit 1; }

chain=${DEMOCHAIN:-$(dirname "$tl")/demochain}
out=${DEMO_CHAIN_DIR:-$(dirname "$tl")/demo-chain}
say "== the chain: one digest from CI to production, in a copy of the example (hack/demochain; the CLI, a registry on 127.0.0.1, the notifier's handler)"
if [ ! -x "$chain" ]; then
  echo "demo: $chain is not built (make demo builds it: go build -o bin/ ./hack/demochain)" >&2
  exit 1
fi
"$chain" -throughline "$tl" -example "$repo" -out "$out" || { echo "demo: the chain stopped (above: the step whose outcome differs)" >&2; exit 1; }
