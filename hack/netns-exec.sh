#!/usr/bin/env bash
# go test -exec wrapper: runs a test binary in private network and PID
# namespaces of its own.
#  - network: only loopback, so nothing the tests start can be reached from
#    outside this machine, even servers that bind 0.0.0.0 (Argo CD's
#    notifications controller hard-codes that for its metrics port); the test
#    binary gets THROUGHLINE_PRIVATE_NETNS=1.
#  - PID: when the test binary ends, however it ends (a -timeout panic skips
#    t.Cleanup), every server it started is killed with the namespace.
#  - mount: a /proc of the PID namespace's own, so that a render child sees
#    its own /proc/<pid>/task and confines itself with Landlock as it does in
#    the sidecar (without it the sandbox reports Landlock missing).
#
#   go test -exec "$PWD/hack/netns-exec.sh" -tags e2e ./e2e/...
#
# Needs root (or CAP_SYS_ADMIN) and iproute2. Without them it runs the binary
# as it is, and the tests that need the namespace skip (fail when CI=true).
set -euo pipefail

if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! unshare --net --pid --fork --mount --mount-proc true 2>/dev/null; then
  echo "netns-exec.sh: cannot create network/PID namespaces (needs root and iproute2); running $1 without them" >&2
  exec "$@"
fi
# bash stays PID 1 of the namespace (it reaps orphans); when it returns, the
# kernel kills whatever is left. Only loopback, no route out: internal/testenv
# gives kube-apiserver its advertise address, so it needs no default route.
exec unshare --net --pid --fork --kill-child --mount --mount-proc -- bash -c '
  set -e
  ip link set lo up
  export THROUGHLINE_PRIVATE_NETNS=1
  "$@"' netns-exec "$@"
