package benchfixture

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// MonorepoEnvironments are the environments of every app of the monorepo,
// each an overlay apps/<app>/overlays/<env> registered in its policy.
var MonorepoEnvironments = []string{"dev", "staging", "production"}

// MonorepoMinObjects and MonorepoMaxObjects bound an app's object count.
const (
	MonorepoMinObjects = 5
	MonorepoMaxObjects = 500
)

// MonorepoApp is one app of the monorepo: its name and object count.
type MonorepoApp struct {
	Name    string
	Objects int
}

// MonorepoSize is the object count of the i-th of n apps: 5 to 500, most
// apps small and a few large, as in a real monorepo (5 * 100^(u^2) with u
// spread evenly over [0, 1] by the golden ratio sequence: median ~20,
// mean ~70); the last app has 500.
func MonorepoSize(i, n int) int {
	if i == n-1 {
		return MonorepoMaxObjects
	}
	u := math.Mod(float64(i)*0.6180339887498949, 1)
	s := int(math.Round(MonorepoMinObjects * math.Pow(100, u*u)))
	return min(max(s, MonorepoMinObjects), MonorepoMaxObjects)
}

// WriteMonorepo writes a GitOps monorepo of n apps under root: per app a
// base of MonorepoSize objects (Deployments, Services and ConfigMaps, one
// file each) and one overlay per MonorepoEnvironments entry (namespace:,
// every image pinned by digest in images:, a patch of every Deployment),
// plus throughline-policy.yaml registering the environments (paths
// apps/*/overlays/<env>, namespaces *-<env>). It returns the apps in order.
func WriteMonorepo(root string, n int) ([]MonorepoApp, error) {
	w := &treeWriter{}
	w.file(filepath.Join(root, "README.md"), "# monorepo benchmark\n")
	var pol strings.Builder
	pol.WriteString("apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\nenvironments:\n")
	for _, env := range MonorepoEnvironments {
		fmt.Fprintf(&pol, "  %s:\n    cluster: %s-1\n    paths: [\"apps/*/overlays/%s\"]\n    namespaces: [\"*-%s\"]\n", env, env, env, env)
	}
	w.file(filepath.Join(root, "throughline-policy.yaml"), pol.String())
	apps := make([]MonorepoApp, n)
	for i := range n {
		apps[i] = MonorepoApp{Name: fmt.Sprintf("app-%03d", i), Objects: MonorepoSize(i, n)}
		writeMonorepoApp(w, filepath.Join(root, "apps", apps[i].Name), apps[i])
	}
	if w.err != nil {
		return nil, fmt.Errorf("writing the monorepo benchmark tree: %w", w.err)
	}
	return apps, nil
}

// ChangeMonorepoApp changes one object of app's base in the monorepo at
// root (a ConfigMap's data, else a Deployment's replicas): a commit that
// changes every environment's render of that app and no other.
func ChangeMonorepoApp(root, app, revision string) error {
	p := filepath.Join(root, "apps", app, "base", "object-0002.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("changing %s: %w", app, err)
	}
	out := strings.Replace(string(b), "revision: \"1\"", fmt.Sprintf("revision: %q", revision), 1)
	if out == string(b) {
		return fmt.Errorf("changing %s: %s holds no revision to change", app, p)
	}
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		return fmt.Errorf("changing %s: %w", app, err)
	}
	return nil
}

// treeWriter writes files, keeping the first error.
type treeWriter struct{ err error }

func (w *treeWriter) file(p, s string) {
	if w.err != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.err = err
		return
	}
	w.err = os.WriteFile(p, []byte(s), 0o644)
}

// writeMonorepoApp writes one app: object i is a Deployment (i%3 == 0), a
// Service (1) or a ConfigMap (2).
func writeMonorepoApp(w *treeWriter, dir string, app MonorepoApp) {
	var k strings.Builder
	k.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
	for i := range app.Objects {
		name := fmt.Sprintf("object-%04d.yaml", i)
		fmt.Fprintf(&k, "  - %s\n", name)
		w.file(filepath.Join(dir, "base", name), monorepoObject(app.Name, i))
	}
	w.file(filepath.Join(dir, "base", "kustomization.yaml"), k.String())
	for _, env := range MonorepoEnvironments {
		var o strings.Builder
		fmt.Fprintf(&o, `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: %s-%s
resources:
  - ../../base
patches:
  - path: environment.yaml
    target:
      kind: Deployment
images:
`, app.Name, env)
		for i, im := range Images {
			fmt.Fprintf(&o, "  - name: %s\n    newTag: \"1.4.%d@%s\"\n", im, i, Digest(i))
		}
		od := filepath.Join(dir, "overlays", env)
		w.file(filepath.Join(od, "kustomization.yaml"), o.String())
		w.file(filepath.Join(od, ".throughline"), "")
		w.file(filepath.Join(od, "environment.yaml"), environmentPatch(env))
	}
}

// monorepoObject is the i-th object of app's base.
func monorepoObject(app string, i int) string {
	name := fmt.Sprintf("%s-%04d", app, i)
	switch i % 3 {
	case 1:
		return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: %s
spec:
  selector:
    app.kubernetes.io/name: %s
  ports:
    - name: http
      port: 80
      targetPort: http
`, name, name)
	case 2:
		return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
data:
  revision: "1"
  LOG_LEVEL: info
`, name)
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
  labels:
    app.kubernetes.io/name: %s
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: %s
  template:
    metadata:
      labels:
        app.kubernetes.io/name: %s
    spec:
      containers:
        - name: app
          image: %s
          ports:
            - name: http
              containerPort: 8080
          resources:
            requests: {cpu: 100m, memory: 128Mi}
            limits: {memory: 256Mi}
`, name, name, name, name, Images[(i/3)%2])
}
