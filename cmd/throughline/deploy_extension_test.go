package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/render"
)

// TestArgoCDExtensionBundles renders the two halves of the Argo CD
// extension's install through the project's own policy, and checks that
// they meet: deploy/serve with its notifier and ui Components serves the
// web view on the port, Service and namespace that deploy/argocd/extension's
// extension.config names, behind the token argocd-server adds, and lets in
// Argo CD's namespace only; the Argo CD side (beside deploy/argocd, on
// hack/argocd-stand-in's install) turns the proxy extension on,
// lets role:readonly invoke it without touching policy.csv, and mounts the
// bundle where argocd-server loads extensions.
func TestArgoCDExtensionBundles(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "serve"), os.DirFS(filepath.Join(repoRoot, "deploy", "serve"))); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(root, "throughline"), os.DirFS(filepath.Join(repoRoot, "deploy", "argocd"))); err != nil {
		t.Fatal(err)
	}
	writeTree(t, root, map[string]string{
		"viewed/kustomization.yaml": "resources: [../serve]\ncomponents: [../serve/notifier, ../serve/ui]\n",
		"argocd/kustomization.yaml": "namespace: argocd\nresources: [repo-server.yaml, server.yaml]\ncomponents: [../throughline, ../throughline/extension]\n",
	})
	for _, f := range []string{"repo-server.yaml", "server.yaml"} {
		standIn, err := os.ReadFile(filepath.Join(repoRoot, "hack", "argocd-stand-in", f))
		if err != nil {
			t.Fatal(err)
		}
		writeTree(t, root, map[string]string{"argocd/" + f: string(standIn)})
	}
	objects := func(path string) map[string]map[string]any {
		d, err := acceptance.Declare(context.Background(), acceptance.Request{Render: render.Options{Root: root, Path: path}})
		if err != nil {
			t.Fatalf("%s does not pass throughline's own policy: %v", path, err)
		}
		out := map[string]map[string]any{}
		for _, o := range d.Objects {
			meta, _ := o.Map["metadata"].(map[string]any)
			out[fmt.Sprintf("%s/%s", o.Map["kind"], meta["name"])] = o.Map
		}
		return out
	}
	serve, argocd := objects("viewed"), objects("argocd")
	// A Component's own objects are not namespaced by deploy/serve's
	// kustomization: each must name the namespace itself.
	for id, o := range serve {
		meta, _ := o["metadata"].(map[string]any)
		cluster := strings.HasPrefix(id, "Namespace/") || strings.HasPrefix(id, "Cluster")
		if ns, _ := meta["namespace"].(string); !cluster && ns != "throughline-system" {
			t.Errorf("deploy/serve with the notifier and ui Components renders %s in namespace %q, want throughline-system", id, ns)
		}
	}

	// The Argo CD side.
	data := func(name string) map[string]any {
		cm, ok := argocd["ConfigMap/"+name]
		if !ok {
			t.Fatalf("no ConfigMap %s", name)
		}
		d, _ := cm["data"].(map[string]any)
		return d
	}
	if v := data("argocd-cmd-params-cm")["server.enable.proxy.extension"]; v != "true" {
		t.Errorf("server.enable.proxy.extension: %v", v)
	}
	rbac := data("argocd-rbac-cm")
	if p, _ := rbac["policy.throughline.csv"].(string); strings.TrimSpace(p) != "p, role:readonly, extensions, invoke, throughline, allow" {
		t.Errorf("policy.throughline.csv: %q", p)
	}
	if rbac["policy.csv"] != "g, platform, role:admin\n" {
		t.Errorf("the Component changed the install's policy.csv: %q", rbac["policy.csv"])
	}
	if _, ok := data("argocd-cm")["resource.customizations.health.throughline.dev_Acceptance"]; !ok {
		t.Error("with deploy/argocd's Component, argocd-cm lost the Acceptance health")
	}
	var ext struct {
		Services []struct {
			URL     string
			Headers []struct{ Name, Value string }
		}
	}
	raw, _ := data("argocd-cm")["extension.config.throughline"].(string)
	if err := yaml.Unmarshal([]byte(raw), &ext); err != nil {
		t.Fatalf("extension.config.throughline: %v", err)
	}
	if len(ext.Services) != 1 || len(ext.Services[0].Headers) != 1 || ext.Services[0].Headers[0].Name != "Authorization" ||
		ext.Services[0].Headers[0].Value != "$throughline.ui.authorization" {
		t.Fatalf("extension.config.throughline: %+v", ext)
	}
	y, err := yaml.Marshal(argocd["Deployment/argocd-server"])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mountPath: /tmp/extensions/throughline", "name: throughline-argocd-extension", "optional: true",
		"mountPath: /shared/app"} {
		if !strings.Contains(string(y), want) {
			t.Errorf("argocd-server lacks %q:\n%s", want, y)
		}
	}

	// It names serve's web view.
	u, err := url.Parse(ext.Services[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	svc, ok := serve["Service/"+strings.Split(u.Hostname(), ".")[0]]
	if !ok {
		t.Fatalf("extension.config names %s: no such Service in deploy/serve with the ui Component", u.Host)
	}
	meta, _ := svc["metadata"].(map[string]any)
	if want := fmt.Sprintf("%s.%s.svc", meta["name"], meta["namespace"]); u.Hostname() != want {
		t.Errorf("extension.config's host %s, want %s", u.Hostname(), want)
	}
	sy, _ := yaml.Marshal(svc)
	if !strings.Contains(string(sy), "port: "+u.Port()) || !strings.Contains(string(sy), "targetPort: ui") {
		t.Errorf("Service %s does not serve port %s to the ui port:\n%s", meta["name"], u.Port(), sy)
	}
	dy, _ := yaml.Marshal(serve["Deployment/throughline-serve"])
	for _, want := range []string{"- --ui-bind-address=:" + u.Port(), "- --ui-api-token-file=/etc/throughline/ui/api-token", "name: ui",
		"containerPort: " + u.Port(), "secretName: throughline-ui", "- --notifier-repo=/var/lib/throughline/gitops"} {
		if !strings.Contains(string(dy), want) {
			t.Errorf("throughline-serve lacks %q", want)
		}
	}
	ny, _ := yaml.Marshal(serve["NetworkPolicy/throughline-serve"])
	if !strings.Contains(string(ny), "port: "+u.Port()) || !strings.Contains(string(ny), "kubernetes.io/metadata.name: argocd") {
		t.Errorf("the NetworkPolicy does not let argocd in on %s:\n%s", u.Port(), ny)
	}
}
