package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/render"
)

// TestServeNotifierComponent renders deploy/serve with the notifier
// Component as docs/operations.md installs it and checks that what it runs
// is what serve accepts: the args parse as serve's flags, every file a flag
// names is in a read-only Secret volume, the clone is in the writable
// emptyDir, the Git URL comes from the ConfigMap and no credential is in
// an argument.
func TestServeNotifierComponent(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "serve"), os.DirFS(filepath.Join(repoRoot, "deploy", "serve"))); err != nil {
		t.Fatal(err)
	}
	writeTree(t, root, map[string]string{"on/kustomization.yaml": "resources: [../serve]\ncomponents: [../serve/notifier]\n"})
	d, err := acceptance.Declare(context.Background(), acceptance.Request{Render: render.Options{Root: root, Path: "on"}})
	if err != nil {
		t.Fatalf("deploy/serve with the notifier Component does not pass throughline's own policy: %v", err)
	}
	checkReleasePin(t, "serve", d.Objects)
	var dep render.Object
	configMap := false
	for _, o := range d.Objects {
		switch id := o.ID(); {
		case id.Kind == "Deployment":
			dep = o
		case id.Kind == "ConfigMap" && id.Name == "throughline-notifier":
			configMap = true
		}
	}
	if dep.Map == nil || !configMap {
		t.Fatalf("rendered no Deployment (%t) or no ConfigMap throughline-notifier (%t)", dep.Map != nil, configMap)
	}
	ctr := dep.Map["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	var args []string
	for _, a := range ctr["args"].([]any) {
		args = append(args, a.(string))
	}
	cmd, _, err := newRootCommand(&globals{}, io.Discard, io.Discard).Find(args[:1])
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.ParseFlags(args[1:]); err != nil {
		t.Fatalf("serve does not accept the Component's args %v: %v", args, err)
	}
	// docs/operations.md's SSH patch replaces args[9].
	if len(args) < 10 || !strings.HasPrefix(args[9], "--notifier-git-token-file=") {
		t.Errorf("args[9] is not the token file that docs/operations.md's SSH patch replaces: %v", args)
	}
	vols, mounts := podVolumes(t, dep, "serve")
	f := cmd.Flags()
	get := func(name string) string {
		v, err := f.GetString(name)
		if err != nil || v == "" {
			t.Fatalf("--%s is not set by the Component: %v", name, err)
		}
		return v
	}
	if get("notifier-bind-address") != ":8443" || get("notifier-git-url") != "$(THROUGHLINE_GIT_URL)" {
		t.Errorf("args %v", args)
	}
	checkEmptyDir(t, "the notifier's clone", filepath.Dir(get("notifier-repo")), vols, mounts)
	for _, flag := range []string{"notifier-git-token-file", "notifier-flux-key-file", "notifier-argocd-token-file", "notifier-evidence-key-file"} {
		dir := filepath.Dir(get(flag))
		v, ok := vols[mounts[dir]]
		if !ok || v["secret"] == nil {
			t.Errorf("--%s %s: no Secret volume is mounted at %s (mounts %v)", flag, get(flag), dir, mounts)
		}
	}
	for _, m := range ctr["volumeMounts"].([]any) {
		m := m.(map[string]any)
		if strings.HasPrefix(m["mountPath"].(string), "/etc/throughline/") && m["readOnly"] != true {
			t.Errorf("secret mount %v is writable", m)
		}
	}
	env := ctr["env"].([]any)
	found := false
	for _, e := range env {
		e := e.(map[string]any)
		if e["name"] == "THROUGHLINE_GIT_URL" {
			ref := e["valueFrom"].(map[string]any)["configMapKeyRef"].(map[string]any)
			found = ref["name"] == "throughline-notifier" && ref["key"] == "git-url"
		}
	}
	if !found {
		t.Errorf("THROUGHLINE_GIT_URL does not come from the ConfigMap: %v", env)
	}
	for _, a := range args {
		if strings.Contains(a, "@") || strings.Contains(strings.ToLower(a), "password") {
			t.Errorf("an argument carries a credential: %q", a)
		}
	}
}
