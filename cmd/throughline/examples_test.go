package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/internal/cli"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
)

// TestOwnArtifactsArePinned: a project that refuses unpinned images pins
// every image it ships. Every string "image" field in plugin.yaml, examples/
// and deploy/ passes the pin rule or the example allow-list, except in the
// overlay that must be refused and in bases, whose overlays pin the image
// (TestRenderExamples renders them through policy).
func TestOwnArtifactsArePinned(t *testing.T) {
	allowData, err := os.ReadFile(filepath.Join(exampleRepo, policy.AllowListFile))
	if err != nil {
		t.Fatal(err)
	}
	allow, err := policy.ParseAllowList(allowData, policy.AllowListFile)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, dir := range []string{"examples", "deploy", "plugin.yaml"} {
		err := filepath.Walk(filepath.Join(repoRoot, dir), func(p string, fi os.FileInfo, err error) error {
			// A chart's templates are no YAML until rendered: TestRenderChartExample
			// renders the example's chart through policy.
			if err != nil || fi.IsDir() || !strings.HasSuffix(p, ".yaml") || strings.Contains(p, "refused-unpinned") ||
				strings.Contains(filepath.ToSlash(p), "/templates/") {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			nodes, err := kio.FromBytes(data)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			for _, n := range nodes {
				v, err := n.Map()
				if err != nil {
					// a top-level sequence (a JSON patch)
					var list []any
					if err := n.YNode().Decode(&list); err != nil {
						return fmt.Errorf("%s: %w", p, err)
					}
					v = map[string]any{"list": list}
				}
				walkImages(v, func(image string) {
					checked++
					_, err := policy.CheckImage(image)
					_, allowed := allow.Match(image, policy.Environment("", filepath.ToSlash(filepath.Dir(p))))
					bare := !strings.ContainsAny(image, ":@")
					if err != nil && !allowed && (!bare || !strings.Contains(p, "/base/")) {
						t.Errorf("%s: %v", p, err)
					}
				})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 4 {
		t.Errorf("only %d images checked: the walk is broken", checked)
	}
}

func walkImages(v any, visit func(string)) {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			if s, ok := val.(string); ok && k == "image" {
				visit(s)
				continue
			}
			walkImages(val, visit)
		}
	case []any:
		for _, item := range t {
			walkImages(item, visit)
		}
	}
}

// TestArgoCDInstallComponent renders the sidecar Component on a stand-in
// argocd-repo-server and checks the contract Argo CD needs.
func TestArgoCDInstallComponent(t *testing.T) {
	root := t.TempDir()
	component := filepath.Join(root, "throughline")
	if err := os.CopyFS(component, os.DirFS(filepath.Join(repoRoot, "deploy", "argocd"))); err != nil {
		t.Fatal(err)
	}
	writeStandInRepoServer(t, root)
	d, err := acceptance.Declare(context.Background(), acceptance.Request{Render: render.Options{Root: root, Path: "argocd"}})
	if err != nil {
		t.Fatalf("the install bundle does not pass throughline's own policy: %v", err)
	}
	var sidecar map[string]any
	var pluginCM string
	for _, o := range d.Objects {
		switch o.ID().Kind {
		case "Deployment":
			for _, c := range o.Map["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any) {
				if c.(map[string]any)["name"] == "throughline" {
					sidecar = c.(map[string]any)
				}
			}
		case "ConfigMap":
			if o.ID().Name == "throughline-cmp-plugin" {
				pluginCM = o.Map["data"].(map[string]any)["plugin.yaml"].(string)
			}
		}
	}
	if sidecar == nil {
		t.Fatal("no throughline sidecar in argocd-repo-server")
	}
	// One entrypoint: the resident renderer beside argocd-cmp-server.
	if cmd := fmt.Sprint(sidecar["command"]); cmd != "[/usr/local/bin/throughline cmp sidecar -- /var/run/argocd/argocd-cmp-server]" {
		t.Errorf("sidecar command %v", cmd)
	}
	env := map[string]any{}
	for _, e := range sidecar["env"].([]any) {
		env[e.(map[string]any)["name"].(string)] = e.(map[string]any)["value"]
	}
	if d, _ := env[cli.EnvResidentDir].(string); !strings.HasPrefix(d, "/tmp/") {
		t.Errorf("sidecar %s = %v, want a directory under its own /tmp", cli.EnvResidentDir, env[cli.EnvResidentDir])
	}
	if sc := sidecar["securityContext"].(map[string]any); sc["runAsUser"] != 999 {
		t.Errorf("sidecar runAsUser %v", sc["runAsUser"])
	}
	mounts := map[string]bool{}
	for _, m := range sidecar["volumeMounts"].([]any) {
		mounts[m.(map[string]any)["mountPath"].(string)] = true
	}
	for _, want := range []string{"/var/run/argocd", "/home/argocd/cmp-server/plugins", "/home/argocd/cmp-server/config/plugin.yaml", "/tmp"} {
		if !mounts[want] {
			t.Errorf("sidecar lacks the mount %s", want)
		}
	}
	root2, err := os.ReadFile(filepath.Join(repoRoot, "plugin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if pluginCM != string(root2) {
		t.Errorf("deploy/argocd/cmp-plugin.yaml differs from plugin.yaml:\n%s", pluginCM)
	}
}

// writeStandInRepoServer writes root/argocd: a pinned argocd-repo-server and
// a kustomization applying the Component copied to root/throughline.
func writeStandInRepoServer(t *testing.T, root string) {
	t.Helper()
	standIn, err := os.ReadFile(filepath.Join(repoRoot, "hack", "argocd-stand-in", "repo-server.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, root, map[string]string{
		"argocd/kustomization.yaml": "resources: [repo-server.yaml]\ncomponents: [../throughline]\n",
		"argocd/repo-server.yaml":   string(standIn),
	})
}
