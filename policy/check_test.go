package policy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
)

func objects(t *testing.T, yaml string) []render.Object {
	t.Helper()
	objs, err := render.DecodeManifests([]byte(yaml), "app/manifests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

const pinned = "r.example.test/app:1@sha256:" + hex64

func TestCheckObjectsFindsEveryContainer(t *testing.T) {
	t.Parallel()
	objs := objects(t, `apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: ops}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          initContainers: [{name: init, image: "busybox"}]
          containers: [{name: job, image: "`+pinned+`"}]
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: api}
spec:
  template:
    spec:
      containers: [{name: api, image: "r.example.test/api:2.0"}]
---
apiVersion: v1
kind: Pod
metadata: {name: debug}
spec:
  containers: [{name: main, image: "`+pinned+`"}]
  ephemeralContainers: [{name: dbg, image: "r.example.test/dbg:latest"}]
---
apiVersion: example.test/v1
kind: Worker
metadata: {name: w}
spec:
  deep:
    podTemplate:
      spec:
        containers: [{name: w}, {name: n, image: 42}]
`)
	res := policy.CheckObjects(objs, nil, "")
	var got []string
	for _, v := range res.Violations {
		got = append(got, string(v.Rule)+" "+v.Object+" "+v.Field)
	}
	want := []string{
		`unpinned-image CronJob.batch ops/nightly spec.jobTemplate.spec.template.spec.initContainers[0].image (container "init")`,
		`unpinned-image Pod debug spec.ephemeralContainers[0].image (container "dbg")`,
		`unpinned-image Rollout.argoproj.io api spec.template.spec.containers[0].image (container "api")`,
		`missing-image Worker.example.test w spec.deep.podTemplate.spec.containers[0].image (container "w")`,
		`missing-image Worker.example.test w spec.deep.podTemplate.spec.containers[1].image (container "n")`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(res.Containers) != 2 {
		t.Errorf("declared containers: %d, want 2", len(res.Containers))
	}
	for _, v := range res.Violations {
		if v.File != "app/manifests.yaml" {
			t.Errorf("violation without its file: %+v", v)
		}
	}
	err := res.Err()
	var r *policy.Refusal
	if !errors.As(err, &r) || len(r.Violations) != 5 ||
		!slices.ContainsFunc(r.Violations, func(v policy.Violation) bool { return v.Value == "r.example.test/dbg:latest" }) {
		t.Errorf("refusal: %v", err)
	}
}

func TestCheckObjectsDuplicates(t *testing.T) {
	t.Parallel()
	objs := objects(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: a, namespace: x}
---
apiVersion: extensions/v1beta1
kind: Deployment
metadata: {name: a, namespace: x}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: a, namespace: y}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: x}
`)
	// apps/v1 and extensions/v1beta1 are different groups: not duplicates.
	if vs := policy.CheckObjects(objs, nil, "").Violations; len(vs) != 0 {
		t.Errorf("unexpected violations %v", vs)
	}
	objs = append(objs, objs[0])
	vs := policy.CheckObjects(objs, nil, "").Violations
	if len(vs) != 1 || vs[0].Rule != policy.RuleDuplicateObject || vs[0].Object != "Deployment.apps x/a" {
		t.Errorf("duplicates: %v", vs)
	}
}

func TestAllowList(t *testing.T) {
	t.Parallel()
	allow, err := policy.ParseAllowList([]byte(`apiVersion: throughline.dev/v1alpha1
kind: AllowList
images:
  - pattern: "r.example.test/vendor/*"
    reason: "vendor ships tags only (SEC-1)"
`), "throughline-allowlist.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs := objects(t, `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
    - {name: a, image: "r.example.test/vendor/agent:3"}
    - {name: b, image: "r.example.test/vendor/sub/agent:3"}
`)
	res := policy.CheckObjects(objs, allow, "")
	if len(res.Exceptions) != 1 || res.Exceptions[0].Image != "r.example.test/vendor/agent:3" || res.Exceptions[0].Reason != "vendor ships tags only (SEC-1)" {
		t.Errorf("exceptions %+v", res.Exceptions)
	}
	if len(res.Violations) != 1 || res.Violations[0].Value != "r.example.test/vendor/sub/agent:3" {
		t.Errorf("\"*\" must not cross \"/\": violations %+v", res.Violations)
	}

	for name, doc := range map[string]string{
		"unknown field":  "apiVersion: throughline.dev/v1alpha1\nkind: AllowList\nimages: [{pattern: x, reason: y, owner: z}]\n",
		"missing reason": "apiVersion: throughline.dev/v1alpha1\nkind: AllowList\nimages: [{pattern: x}]\n",
		"bad pattern":    "apiVersion: throughline.dev/v1alpha1\nkind: AllowList\nimages: [{pattern: \"[\", reason: y}]\n",
		"wrong kind":     "apiVersion: throughline.dev/v1alpha1\nkind: Policy\nimages: []\n",
	} {
		if _, err := policy.ParseAllowList([]byte(doc), "throughline-allowlist.yaml"); err == nil || !strings.Contains(err.Error(), "throughline-allowlist.yaml") {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
	}
}

func TestCheckTree(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("app/kustomization.yaml", `resources:
  - github.com/org/repo//base?ref=0123456789abcdef0123456789abcdef01234567
  - github.com/org/repo//base?ref=v1.0.0
  - https://github.com/org/repo//base?ref=main
  - https://raw.example.test/org/repo/0123456789abcdef0123456789abcdef01234567/x.yaml
  - https://raw.example.test/org/repo/main/x.yaml
  - git@github.com:org/repo.git//base?ref=0123456789abcdef0123456789abcdef0123456
patches:
  - path: https://example.test/patch.yaml
helmCharts:
  - {name: exact, version: 1.2.3}
  - {name: vexact, version: v1.2.3}
  - {name: none}
  - {name: caret, version: ^1.2.0}
  - {name: tilde, version: ~1.2}
  - {name: star, version: "1.x"}
  - {name: short, version: "1.2"}
`)
	app, err := render.Open(context.Background(), render.Options{Root: root, Path: "app"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range policy.CheckTree(app) {
		got = append(got, v.Field+" "+string(v.Rule))
		if v.File != "app/kustomization.yaml" {
			t.Errorf("violation without file: %+v", v)
		}
	}
	want := []string{
		"helmCharts[2].version floating-chart-version",
		"helmCharts[3].version floating-chart-version",
		"helmCharts[4].version floating-chart-version",
		"helmCharts[5].version floating-chart-version",
		"helmCharts[6].version floating-chart-version",
		"patches[0].path floating-remote-resource",
		"resources[1] floating-remote-resource",
		"resources[2] floating-remote-resource",
		"resources[4] floating-remote-resource",
		"resources[5] floating-remote-resource",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tree violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
