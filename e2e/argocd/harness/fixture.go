package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Digests of the fixture; nothing pulls them.
const (
	fixtureDigest = "sha256:4bc2b43bd0cc01f5ec09b8ffbbf6e7e3e2b0d2c2b2a3ef8ef8f0d0b4e3c1a201"
	busyboxDigest = "sha256:9ae97d36d26566ff84e8893c64a6dc4fe8ca6d1144bf5b87b2b85a32def253c7"
)

// fixture is a small GitOps repository in the seed topology: a Kustomize
// base, an overlay reaching ../../base (pinned by the overlay's images
// entry), an overlay with a tag-only image, a plain-YAML app, and apps
// without the .throughline marker.
var fixture = map[string]string{
	"apps/checkout/base/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- deployment.yaml
- service.yaml
labels:
- pairs:
    app.kubernetes.io/name: checkout
  includeSelectors: true
`,
	"apps/checkout/base/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: checkout
spec:
  replicas: 2
  template:
    spec:
      initContainers:
      - name: migrate
        image: docker.io/library/busybox:1.36@` + busyboxDigest + `
        command: ["true"]
      containers:
      - name: app
        image: ghcr.io/acme/checkout
        ports:
        - containerPort: 8080
`,
	"apps/checkout/base/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: checkout
spec:
  ports:
  - port: 80
    targetPort: 8080
`,
	"apps/checkout/overlays/staging/.throughline": "",
	"apps/checkout/overlays/staging/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: checkout-staging
resources:
- ../../base
images:
- name: ghcr.io/acme/checkout
  newTag: "1.4.2"
  digest: ` + fixtureDigest + `
configMapGenerator:
- name: checkout-config
  literals:
  - ENVIRONMENT=staging
`,
	"apps/checkout/overlays/unpinned/.throughline": "",
	"apps/checkout/overlays/unpinned/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: checkout-dev
resources:
- ../../base
images:
- name: ghcr.io/acme/checkout
  newTag: "1.4.2"
patches:
- patch: |-
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: checkout
    spec:
      template:
        spec:
          containers:
          - name: proxy
            image: nginx:1.27
`,
	"apps/cron/.throughline": "",
	"apps/cron/cronjob.yaml": `apiVersion: batch/v1
kind: CronJob
metadata:
  name: report
  namespace: reports
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: report
            image: ghcr.io/acme/report:2.0.0@` + fixtureDigest + `
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: report-config
  namespace: reports
data:
  format: csv
`,
	"apps/unmarked/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: unmarked
data: {}
`,
	"README.md": "fixture GitOps repository\n",
}

// writeFixture writes the fixture and commits it when git is available
// (Argo CD streams .git too unless reposerver.plugin.tar.exclusions says no).
func writeFixture(t *testing.T, repo string) {
	t.Helper()
	writeRepo(t, repo, fixture)
}

// writeRepo writes files (slash-separated paths relative to repo) and
// commits them when git is available.
func writeRepo(t *testing.T, repo string, files map[string]string) {
	t.Helper()
	for rel, body := range files {
		p := filepath.Join(repo, rel)
		Must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		Must(t, os.WriteFile(p, []byte(body), 0o644))
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Log("git not found: fixture is not a Git work tree")
		return
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=e2e", "-c", "user.email=e2e@throughline.dev", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "fixture"},
	} {
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
