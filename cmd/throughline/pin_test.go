package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
)

const pinBaseDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: checkout
spec:
  template:
    spec:
      initContainers:
        - name: migrate
          image: REG/shop/migrate:3.1@sha256:0000000000000000000000000000000000000000000000000000000000000000
      containers:
        - name: checkout
          image: REG/shop/checkout:1.4.2
        - name: agent
          image: REG/shop/agent:2.0 # the vendor's agent
`

func pinFixture(t *testing.T, host string, kustomization string) (root, overlay string) {
	t.Helper()
	root = t.TempDir()
	writeTree(t, root, map[string]string{
		"apps/checkout/base/kustomization.yaml":             "resources:\n  - deployment.yaml\n",
		"apps/checkout/base/deployment.yaml":                strings.ReplaceAll(pinBaseDeployment, "REG", host),
		"apps/checkout/overlays/staging/kustomization.yaml": kustomization,
	})
	return root, filepath.Join(root, "apps/checkout/overlays/staging")
}

// TestPinKustomization: the overlay's images: entry gets newTag
// "tag@digest", an image of the base without an entry gets one, comments
// and formatting stay, the base is untouched, and the render is pinned.
func TestPinKustomization(t *testing.T) {
	host := startRegistry(t)
	checkout, _ := pushMultiArch(t, host+"/shop/checkout:1.4.2")
	agent := pushRandomImage(t, host+"/shop/agent:2.0")
	kust := `# Staging overlay.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: checkout-staging   # keep
resources:
  - ../../base
images:
  # The artifact identity: promotion changes only this digest.
  - name: REG/shop/checkout
    newTag: "1.4.2"   # informative

# Replicas for staging.
replicas:
  - name: checkout
    count: 2
`
	root, overlay := pinFixture(t, host, strings.ReplaceAll(kust, "REG", host))
	base := readFile(t, filepath.Join(root, "apps/checkout/base/deployment.yaml"))

	chk := runCLI(t, "pin", "--check", "--root", root, overlay)
	if chk.code != exitcode.Refused || !strings.Contains(chk.stdout, host+"/shop/checkout:1.4.2") || !strings.Contains(chk.stdout, host+"/shop/agent:2.0") || !strings.Contains(chk.stderr, "2 unpinned image(s)") {
		t.Fatalf("pin --check: exit %d\n%s\n%s", chk.code, chk.stdout, chk.stderr)
	}
	if strings.Contains(chk.stdout, "migrate") {
		t.Fatalf("pin --check lists a pinned image: %s", chk.stdout)
	}
	if got := readFile(t, filepath.Join(overlay, "kustomization.yaml")); got != strings.ReplaceAll(kust, "REG", host) {
		t.Fatalf("pin --check changed the kustomization:\n%s", got)
	}

	r := runCLI(t, "pin", "--root", root, overlay)
	if r.code != exitcode.OK {
		t.Fatalf("pin: exit %d\n%s", r.code, r.stderr)
	}
	want := `# Staging overlay.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: checkout-staging   # keep
resources:
  - ../../base
images:
  # The artifact identity: promotion changes only this digest.
  - name: REG/shop/checkout
    newTag: "1.4.2@CHECKOUT"   # informative
  - name: REG/shop/agent
    newTag: "2.0@AGENT"

# Replicas for staging.
replicas:
  - name: checkout
    count: 2
`
	want = strings.NewReplacer("REG", host, "CHECKOUT", checkout, "AGENT", agent).Replace(want)
	if got := readFile(t, filepath.Join(overlay, "kustomization.yaml")); got != want {
		t.Fatalf("kustomization after pin:\n%s\nwant:\n%s", got, want)
	}
	if got := readFile(t, filepath.Join(root, "apps/checkout/base/deployment.yaml")); got != base {
		t.Fatalf("pin changed the base:\n%s", got)
	}
	for _, w := range []string{`newTag "1.4.2" -> "1.4.2@` + checkout + `"`, "added " + host + "/shop/agent"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("pin report lacks %q:\n%s", w, r.stdout)
		}
	}
	// kustomize renders name:tag@digest, which the policy accepts.
	rr := runCLI(t, "render", "--root", root, overlay)
	if rr.code != exitcode.OK {
		t.Fatalf("render after pin: exit %d\n%s", rr.code, rr.stderr)
	}
	for _, w := range []string{"image: " + host + "/shop/checkout:1.4.2@" + checkout, "image: " + host + "/shop/agent:2.0@" + agent} {
		if !strings.Contains(rr.stdout, w) {
			t.Errorf("render lacks %q", w)
		}
	}
	if c := runCLI(t, "pin", "--check", "--root", root, overlay); c.code != exitcode.OK {
		t.Fatalf("pin --check after pin: exit %d\n%s", c.code, c.stderr)
	}
	// Pinning again changes nothing.
	again := runCLI(t, "pin", "--root", root, overlay)
	if again.code != exitcode.OK || !strings.Contains(again.stdout, "nothing to pin") || readFile(t, filepath.Join(overlay, "kustomization.yaml")) != want {
		t.Fatalf("second pin: exit %d %s %s", again.code, again.stdout, again.stderr)
	}
}

// TestPinKustomizationShapes: no images: at all, compact sequences, an
// entry with newName and no newTag, images: as the last key.
func TestPinKustomizationShapes(t *testing.T) {
	host := startRegistry(t)
	checkout := pushRandomImage(t, host+"/shop/checkout:1.4.2")
	agent := pushRandomImage(t, host+"/shop/agent:2.0")
	for _, tc := range []struct{ name, in, want string }{
		{"no images key", "resources:\n- ../../base\n", "resources:\n- ../../base\nimages:\n- name: REG/shop/agent\n  newTag: \"2.0@AGENT\"\n- name: REG/shop/checkout\n  newTag: \"1.4.2@CHECKOUT\"\n"},
		{"no trailing newline", "resources:\n  - ../../base", "resources:\n  - ../../base\nimages:\n  - name: REG/shop/agent\n    newTag: \"2.0@AGENT\"\n  - name: REG/shop/checkout\n    newTag: \"1.4.2@CHECKOUT\"\n"},
		{"images last, entry without newTag", "resources:\n- ../../base\nimages:\n- name: REG/shop/checkout\n  # no tag here\n", "resources:\n- ../../base\nimages:\n- name: REG/shop/checkout\n  newTag: \"1.4.2@CHECKOUT\"\n  # no tag here\n- name: REG/shop/agent\n  newTag: \"2.0@AGENT\"\n"},
		{"plain and single-quoted", "resources: [../../base]\nimages:\n  - name: REG/shop/checkout\n    newTag: 1.4.2\n  - name: REG/shop/agent\n    newTag: '2.0'\n", "resources: [../../base]\nimages:\n  - name: REG/shop/checkout\n    newTag: 1.4.2@CHECKOUT\n  - name: REG/shop/agent\n    newTag: '2.0@AGENT'\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := strings.NewReplacer("REG", host, "CHECKOUT", checkout, "AGENT", agent)
			root, overlay := pinFixture(t, host, rep.Replace(tc.in))
			r := runCLI(t, "pin", "--root", root, overlay)
			if r.code != exitcode.OK {
				t.Fatalf("pin: exit %d\n%s", r.code, r.stderr)
			}
			if got := readFile(t, filepath.Join(overlay, "kustomization.yaml")); got != rep.Replace(tc.want) {
				t.Fatalf("got:\n%s\nwant:\n%s", got, rep.Replace(tc.want))
			}
		})
	}
}

func TestPinManifests(t *testing.T) {
	host := startRegistry(t)
	web := pushRandomImage(t, host+"/shop/web:1.0")
	job := pushRandomImage(t, host+"/shop/job:latest")
	root := t.TempDir()
	app := filepath.Join(root, "apps", "web")
	in := map[string]string{
		"deploy.yaml": `# web
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
      - name: web
        image: "REG/shop/web:1.0"   # the app
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - name: job
              image: REG/shop/job
`,
		"pod.json": `{
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {"name": "debug"},
  "spec": {"containers": [{"name": "web", "image": "REG/shop/web:1.0"}]}
}
`,
	}
	rep := strings.NewReplacer("REG", host)
	files := map[string]string{}
	for k, v := range in {
		files["apps/web/"+k] = rep.Replace(v)
	}
	writeTree(t, root, files)
	r := runCLI(t, "pin", "--root", root, app)
	if r.code != exitcode.OK {
		t.Fatalf("pin: exit %d\n%s", r.code, r.stderr)
	}
	rep = strings.NewReplacer("REG/shop/web:1.0", host+"/shop/web:1.0@"+web, "REG/shop/job", host+"/shop/job@"+job)
	for k, v := range in {
		if got := readFile(t, filepath.Join(app, k)); got != rep.Replace(v) {
			t.Errorf("%s:\n%s\nwant:\n%s", k, got, rep.Replace(v))
		}
	}
	if !strings.Contains(r.stdout, "spec.jobTemplate.spec.template.spec.containers[0].image") {
		t.Errorf("report lacks the CronJob field:\n%s", r.stdout)
	}
	if c := runCLI(t, "pin", "--check", "--root", root, app); c.code != exitcode.OK {
		t.Fatalf("pin --check after pin: exit %d\n%s", c.code, c.stderr)
	}
}

func TestPinErrors(t *testing.T) {
	host := startRegistry(t)
	pushRandomImage(t, host+"/shop/checkout:1.4.2")
	// The agent tag does not exist: nothing is written.
	kust := "resources:\n  - ../../base\n"
	root, overlay := pinFixture(t, host, kust)
	r := runCLI(t, "pin", "--root", root, overlay)
	if r.code != exitcode.Invalid || !strings.Contains(r.stderr, host+"/shop/agent:2.0") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if got := readFile(t, filepath.Join(overlay, "kustomization.yaml")); got != kust {
		t.Fatalf("a failed pin wrote:\n%s", got)
	}
	// Flow-style images: cannot be edited in place.
	pushRandomImage(t, host+"/shop/agent:2.0")
	root, overlay = pinFixture(t, host, "resources: [../../base]\nimages: [{name: x, newTag: v1}]\n")
	if r := runCLI(t, "pin", "--root", root, overlay); r.code != exitcode.Invalid || !strings.Contains(r.stderr, "block sequence") {
		t.Fatalf("flow images: exit %d: %s", r.code, r.stderr)
	}
	if r := runCLI(t, "pin", "a", "b"); r.code != exitcode.Usage {
		t.Fatalf("two paths: exit %d", r.code)
	}
}

// TestPinKustomizationNewNameAndConflict: an entry that renames an image is
// found by its newName; one name used with two tags cannot be pinned by one
// images: entry and is refused without writing.
func TestPinKustomizationNewNameAndConflict(t *testing.T) {
	host := startRegistry(t)
	mirror := pushRandomImage(t, host+"/mirror/checkout:1.4.2")
	agent := pushRandomImage(t, host+"/shop/agent:2.0")
	pushRandomImage(t, host+"/shop/agent:2.1")
	in := "resources:\n- ../../base\nimages:\n- name: REG/shop/checkout\n  newName: REG/mirror/checkout\n"
	rep := strings.NewReplacer("REG", host, "MIRROR", mirror, "AGENT", agent)
	root, overlay := pinFixture(t, host, rep.Replace(in))
	if r := runCLI(t, "pin", "--root", root, overlay); r.code != exitcode.OK {
		t.Fatalf("pin: exit %d %s", r.code, r.stderr)
	}
	want := "resources:\n- ../../base\nimages:\n- name: REG/shop/checkout\n  newTag: \"1.4.2@MIRROR\"\n  newName: REG/mirror/checkout\n- name: REG/shop/agent\n  newTag: \"2.0@AGENT\"\n"
	if got := readFile(t, filepath.Join(overlay, "kustomization.yaml")); got != rep.Replace(want) {
		t.Fatalf("got:\n%s\nwant:\n%s", got, rep.Replace(want))
	}

	// The agent is used with two tags.
	root, overlay = pinFixture(t, host, "resources:\n- ../../base\n- sidecar.yaml\n")
	writeTree(t, overlay, map[string]string{"sidecar.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: side\nspec:\n  containers:\n  - name: a\n    image: " + host + "/shop/agent:2.1\n"})
	r := runCLI(t, "pin", "--root", root, overlay)
	if r.code != exitcode.Refused || !strings.Contains(r.stderr, `"2.0"`) || !strings.Contains(r.stderr, `"2.1"`) {
		t.Fatalf("two tags: exit %d %s", r.code, r.stderr)
	}
	if got := readFile(t, filepath.Join(overlay, "kustomization.yaml")); got != "resources:\n- ../../base\n- sidecar.yaml\n" {
		t.Fatalf("a refused pin wrote:\n%s", got)
	}
}

// TestPinFlowAndUnicode: columns count characters, not bytes; a flow
// mapping on one line with non-ASCII before the image is edited exactly.
func TestPinFlowAndUnicode(t *testing.T) {
	host := startRegistry(t)
	web := pushRandomImage(t, host+"/shop/web:1.0")
	root := t.TempDir()
	in := "apiVersion: v1\nkind: Pod\nmetadata: {name: web, annotations: {note: \"café ☕ naïve\"}}\nspec:\n  containers: [{name: \"wéb\", image: 'REG/shop/web:1.0'}]  # ünïcode\n"
	writeTree(t, root, map[string]string{"app/pod.yaml": strings.ReplaceAll(in, "REG", host)})
	if r := runCLI(t, "pin", "--root", root, filepath.Join(root, "app")); r.code != exitcode.OK {
		t.Fatalf("pin: exit %d %s", r.code, r.stderr)
	}
	want := strings.ReplaceAll(strings.Replace(in, "REG/shop/web:1.0", "REG/shop/web:1.0@"+web, 1), "REG", host)
	if got := readFile(t, filepath.Join(root, "app/pod.yaml")); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}
