// Package benchfixture holds what the benchmarks of render/, policy/ and
// cmp/ share: the synthetic GitOps repository they render (hack/bench-cli.sh
// writes the same tree with hack/benchtree), the digests it pins, the sizes to run, and CPU-time
// reporting (on a shared machine wall time includes waiting for a core).
package benchfixture

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// EnvLarge adds the 2,000-Deployment size when set to 1.
const EnvLarge = "THROUGHLINE_BENCH_LARGE"

// Images are the repositories the tree uses.
var Images = []string{
	"registry.example.test/bench/api",
	"registry.example.test/bench/worker",
	"registry.example.test/bench/migrate",
	"registry.example.test/bench/proxy",
}

// Digest is the fixed digest of the i-th image.
func Digest(i int) string {
	return "sha256:" + strings.Repeat(fmt.Sprintf("%02x", 0xa0+i), 32)
}

// Sizes are the Deployment counts to run: 20 and 500, and 2,000 with
// EnvLarge=1.
func Sizes() []int {
	if os.Getenv(EnvLarge) != "" {
		return []int{20, 500, 2000}
	}
	return []int{20, 500}
}

// WriteOverlay writes the benchmark repository under root: a base of n
// Deployments (one file each, an init container and a container each), an
// overlay with namespace:, images: pinning every image by digest and a patch
// of every Deployment, plus an unrelated README.md and another app (so a new
// commit elsewhere can be simulated). It returns the overlay path relative
// to root. hack/bench-cli.sh writes the same tree through hack/benchtree.
func WriteOverlay(tb testing.TB, root string, n int) string {
	tb.Helper()
	rel, err := Write(root, n)
	if err != nil {
		tb.Fatal(err)
	}
	return rel
}

// Write is WriteOverlay for programs: it returns the first write error.
func Write(root string, n int) (string, error) {
	var werr error
	base := filepath.Join(root, "apps", "bench", "base")
	overlay := filepath.Join(root, "apps", "bench", "overlays", "production")
	other := filepath.Join(root, "apps", "other")
	for _, d := range []string{base, overlay, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", fmt.Errorf("writing the benchmark tree: %w", err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil && werr == nil {
			werr = fmt.Errorf("writing the benchmark tree: %w", err)
		}
	}
	write(filepath.Join(root, "README.md"), "# bench repository\n")
	write(filepath.Join(other, "configmap.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {revision: \"1\"}\n")
	var k strings.Builder
	k.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
	for i := range n {
		name := fmt.Sprintf("deploy-%04d.yaml", i)
		fmt.Fprintf(&k, "  - %s\n", name)
		write(filepath.Join(base, name), fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: svc-%04d
  labels:
    app.kubernetes.io/name: svc-%04d
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: svc-%04d
  template:
    metadata:
      labels:
        app.kubernetes.io/name: svc-%04d
    spec:
      initContainers:
        - name: migrate
          image: %s
          args: ["migrate", "--check"]
      containers:
        - name: app
          image: %s
          ports:
            - name: http
              containerPort: 8080
          resources:
            requests: {cpu: 100m, memory: 128Mi}
            limits: {memory: 256Mi}
          readinessProbe:
            httpGet: {path: /healthz, port: http}
`, i, i, i, i, Images[2], Images[i%2]))
	}
	write(filepath.Join(base, "kustomization.yaml"), k.String())

	var o strings.Builder
	o.WriteString(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: bench-production
resources:
  - ../../base
patches:
  - path: environment.yaml
    target:
      kind: Deployment
images:
`)
	for i, im := range Images {
		fmt.Fprintf(&o, "  - name: %s\n    newTag: \"1.4.%d@%s\"\n", im, i, Digest(i))
	}
	write(filepath.Join(overlay, "kustomization.yaml"), o.String())
	write(filepath.Join(overlay, "environment.yaml"), environmentPatch("production"))
	if werr != nil {
		return "", werr
	}
	return filepath.ToSlash(filepath.Join("apps", "bench", "overlays", "production")), nil
}

// CPUNow is the CPU time (user + system, every thread) the process has used.
// On a shared machine wall time includes waiting for a core; cpu-ns/op does
// not, so it is reported next to ns/op (see docs/benchmarks.md).
func CPUNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ReportCPU reports the CPU time used since start per iteration.
func ReportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(CPUNow()-start)/float64(b.N), "cpu-ns/op")
}

// environmentPatch is an overlay's patch of every Deployment's app
// container: ENVIRONMENT=env.
func environmentPatch(env string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: any
spec:
  template:
    spec:
      containers:
        - name: app
          env:
            - name: ENVIRONMENT
              value: %s
`, env)
}
