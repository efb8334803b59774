package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/render"
)

// podVolumes returns a Deployment's volumes by name and the mounts of its
// container by mount path (volume name).
func podVolumes(t *testing.T, o render.Object, container string) (map[string]map[string]any, map[string]string) {
	t.Helper()
	spec := o.Map["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	vols := map[string]map[string]any{}
	for _, v := range spec["volumes"].([]any) {
		vols[v.(map[string]any)["name"].(string)] = v.(map[string]any)
	}
	mounts := map[string]string{}
	for _, c := range spec["containers"].([]any) {
		if c.(map[string]any)["name"] != container {
			continue
		}
		for _, m := range c.(map[string]any)["volumeMounts"].([]any) {
			mounts[m.(map[string]any)["mountPath"].(string)] = m.(map[string]any)["name"].(string)
		}
	}
	return vols, mounts
}

// checkEmptyDir: the volume mounted at path is an emptyDir with a size limit.
func checkEmptyDir(t *testing.T, what, path string, vols map[string]map[string]any, mounts map[string]string) {
	t.Helper()
	name, ok := mounts[path]
	if !ok {
		t.Errorf("%s: nothing is mounted at %s (mounts %v)", what, path, mounts)
		return
	}
	ed, ok := vols[name]["emptyDir"].(map[string]any)
	if !ok || ed["sizeLimit"] == nil {
		t.Errorf("%s: the volume %s at %s is not an emptyDir with a sizeLimit: %v", what, name, path, vols[name])
	}
}

// TestDeployWritableVolumes: the containers run with a read-only root
// filesystem, so every path they write is a volume, bounded: the serve
// Deployment's notifier clone (where docs/notifier.md puts it), and the
// sidecar's /tmp (repositories and the render cache).
func TestDeployWritableVolumes(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "notifier.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("--notifier-repo (/[^ `]+)").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/notifier.md does not say where the clone lives")
	}
	clone := string(m[1])

	d, err := acceptance.Declare(context.Background(), acceptance.Request{
		Render: render.Options{Root: filepath.Join(repoRoot, "deploy"), Path: "serve"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range d.Objects {
		if o.ID().Kind != "Deployment" {
			continue
		}
		vols, mounts := podVolumes(t, o, "serve")
		checkEmptyDir(t, "deploy/serve", filepath.Dir(clone), vols, mounts)
		for name, v := range vols {
			if ed, ok := v["emptyDir"].(map[string]any); ok && ed["sizeLimit"] == nil {
				t.Errorf("deploy/serve: emptyDir %s has no sizeLimit", name)
			}
		}
	}

	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "throughline"), os.DirFS(filepath.Join(repoRoot, "deploy", "argocd"))); err != nil {
		t.Fatal(err)
	}
	writeStandInRepoServer(t, root)
	d, err = acceptance.Declare(context.Background(), acceptance.Request{Render: render.Options{Root: root, Path: "argocd"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range d.Objects {
		if o.ID().Kind == "Deployment" {
			vols, mounts := podVolumes(t, o, "throughline")
			checkEmptyDir(t, "deploy/argocd sidecar", "/tmp", vols, mounts)
		}
	}

	// SSH Git remotes: the egress rule is there to uncomment, and the
	// operations guide says how.
	np, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "serve", "networkpolicy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(np), "port: 22}") {
		t.Error("deploy/serve/networkpolicy.yaml has no (commented) egress rule for SSH Git remotes")
	}
	ops, err := os.ReadFile(filepath.Join(repoRoot, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"port 22", clone, "sizeLimit"} {
		if !strings.Contains(string(ops), want) {
			t.Errorf("docs/operations.md does not mention %q", want)
		}
	}
}

// TestNotifierTLSComponent renders the optional cert-manager Component on the
// serve bundle: a Certificate, and the Deployment serving with its Secret.
func TestNotifierTLSComponent(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "serve"), os.DirFS(filepath.Join(repoRoot, "deploy", "serve"))); err != nil {
		t.Fatal(err)
	}
	writeTree(t, root, map[string]string{"tls/kustomization.yaml": "resources: [../serve]\ncomponents: [../serve/notifier-tls]\n"})
	d, err := acceptance.Declare(context.Background(), acceptance.Request{Render: render.Options{Root: root, Path: "tls"}})
	if err != nil {
		t.Fatalf("deploy/serve with the notifier-tls Component does not pass throughline's own policy: %v", err)
	}
	checkReleasePin(t, "serve", d.Objects)
	var cert, args bool
	for _, o := range d.Objects {
		switch o.ID().Kind {
		case "Certificate":
			cert = o.ID().Namespace == "throughline-system"
		case "Deployment":
			vols, mounts := podVolumes(t, o, "serve")
			if name := mounts["/etc/throughline/notifier-tls"]; vols[name]["secret"] == nil {
				t.Errorf("the TLS Secret is not mounted: %v", mounts)
			}
			spec := o.Map["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			for _, a := range spec["containers"].([]any)[0].(map[string]any)["args"].([]any) {
				args = args || a == "--notifier-tls-cert-file=/etc/throughline/notifier-tls/tls.crt"
			}
		}
	}
	if !cert || !args {
		t.Errorf("Certificate in throughline-system: %v; serve --notifier-tls-cert-file: %v", cert, args)
	}
}

// TestNotifierKeylessComponent renders the keyless Component with the
// notifier Component on the serve bundle: serve accepts the args, the
// signing config is a ConfigMap volume and the identity token a projected
// service-account token for audience sigstore (not a Secret, not a
// subPath), and the notifier's Secret still offers only the key file
// serve refuses beside keyless when it exists.
func TestNotifierKeylessComponent(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "serve"), os.DirFS(filepath.Join(repoRoot, "deploy", "serve"))); err != nil {
		t.Fatal(err)
	}
	writeTree(t, root, map[string]string{"keyless/kustomization.yaml": "resources: [../serve]\n" +
		"components: [../serve/notifier, ../serve/notifier-keyless]\n"})
	d, err := acceptance.Declare(context.Background(), acceptance.Request{Render: render.Options{Root: root, Path: "keyless"}})
	if err != nil {
		t.Fatalf("deploy/serve with the notifier-keyless Component does not pass throughline's own policy: %v", err)
	}
	checkReleasePin(t, "serve", d.Objects)
	var dep render.Object
	for _, o := range d.Objects {
		if o.ID().Kind == "Deployment" {
			dep = o
		}
	}
	if dep.Map == nil {
		t.Fatal("rendered no Deployment")
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
	vols, mounts := podVolumes(t, dep, "serve")
	for flag, check := range map[string]func(v map[string]any) bool{
		"notifier-summary-signing-config": func(v map[string]any) bool {
			cm, ok := v["configMap"].(map[string]any)
			return ok && cm["name"] == "throughline-sigstore"
		},
		"notifier-summary-identity-token-file": func(v map[string]any) bool {
			p, ok := v["projected"].(map[string]any)
			if !ok {
				return false
			}
			src := p["sources"].([]any)[0].(map[string]any)["serviceAccountToken"].(map[string]any)
			return src["audience"] == "sigstore" && src["path"] == "token"
		},
	} {
		file, err := cmd.Flags().GetString(flag)
		if err != nil || file == "" {
			t.Fatalf("--%s is not set by the Component: %v", flag, err)
		}
		if v, ok := vols[mounts[filepath.Dir(file)]]; !ok || !check(v) {
			t.Errorf("--%s %s: the volume at %s is %v", flag, file, filepath.Dir(file), v)
		}
	}
}
