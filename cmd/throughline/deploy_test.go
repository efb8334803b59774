package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/render"
)

// TestDeployBundlesPassPolicy renders every install bundle under deploy/
// through acceptance.Declare (render + the project's own policy), as
// `make release` does with `throughline render` after pinning. argocd is a
// Component, so it is rendered on a stand-in argocd-repo-server (see
// TestArgoCDInstallComponent). A new bundle must be added here.
func TestDeployBundlesPassPolicy(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join(repoRoot, "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	// tenancy holds templates (TestTenancyTemplates), no bundle.
	want := map[string]bool{"admission": true, "argocd": true, "crds": true, "flux": true, "grafana": true, "serve": true, "tenancy": true}
	for _, e := range entries {
		if e.IsDir() && !want[e.Name()] {
			t.Errorf("deploy/%s is not rendered by this test", e.Name())
		}
	}
	for _, name := range []string{"admission", "crds", "flux", "grafana", "serve"} {
		t.Run(name, func(t *testing.T) {
			d, err := acceptance.Declare(context.Background(), acceptance.Request{
				Render: render.Options{Root: filepath.Join(repoRoot, "deploy"), Path: name},
			})
			if err != nil {
				t.Fatalf("deploy/%s does not pass throughline's own policy: %v", name, err)
			}
			if len(d.Objects) == 0 {
				t.Fatalf("deploy/%s renders nothing", name)
			}
			checkReleasePin(t, name, d.Objects)
		})
	}
	// The optional ServiceMonitor Component, on the serve bundle as the
	// install docs use it: metrics on the Pod IP, a metrics port, Service,
	// ServiceMonitor and a NetworkPolicy rule for it.
	t.Run("serve/servicemonitor", func(t *testing.T) {
		root := t.TempDir()
		if err := os.CopyFS(filepath.Join(root, "serve"), os.DirFS(filepath.Join(repoRoot, "deploy", "serve"))); err != nil {
			t.Fatal(err)
		}
		writeTree(t, root, map[string]string{"monitored/kustomization.yaml": "resources: [../serve]\ncomponents: [../serve/servicemonitor]\n"})
		d, err := acceptance.Declare(context.Background(), acceptance.Request{Render: render.Options{Root: root, Path: "monitored"}})
		if err != nil {
			t.Fatalf("deploy/serve with the servicemonitor Component does not pass throughline's own policy: %v", err)
		}
		checkReleasePin(t, "serve", d.Objects)
		var found []string
		for _, o := range d.Objects {
			kind, _ := o.Map["kind"].(string)
			y, err := yaml.Marshal(o.Map)
			if err != nil {
				t.Fatal(err)
			}
			text := string(y)
			for _, w := range map[string][]string{
				"Deployment":     {"- --metrics-bind-address=:8080", "name: metrics", "containerPort: 8080"},
				"Service":        {"port: 8080", "targetPort: metrics"},
				"ServiceMonitor": {"apiVersion: monitoring.coreos.com/v1", "port: metrics", "app.kubernetes.io/component: metrics", "namespace: throughline-system"},
				"NetworkPolicy":  {"port: 8080", "kubernetes.io/metadata.name: monitoring"},
			}[kind] {
				if kind == "Service" && !strings.Contains(text, "throughline-serve-metrics") {
					break
				}
				if !strings.Contains(text, w) {
					t.Errorf("%s %v lacks %q:\n%s", kind, o.Map["metadata"], w, text)
				}
				found = append(found, kind)
			}
		}
		for _, k := range []string{"Deployment", "Service", "ServiceMonitor", "NetworkPolicy"} {
			if !slices.Contains(found, k) {
				t.Errorf("the servicemonitor Component renders no %s to check", k)
			}
		}
	})
	// The optional monitoring Component, after deploy/argocd as the
	// install docs use it: the sidecar keeps its image, mounts and
	// entrypoint and gains --metrics-addr=:9465 and the port; Service,
	// ServiceMonitor, NetworkPolicy and PrometheusRule come with it.
	t.Run("argocd/monitoring", func(t *testing.T) {
		root := t.TempDir()
		if err := os.CopyFS(filepath.Join(root, "throughline"), os.DirFS(filepath.Join(repoRoot, "deploy", "argocd"))); err != nil {
			t.Fatal(err)
		}
		writeStandInRepoServer(t, root)
		writeTree(t, root, map[string]string{
			"argocd/kustomization.yaml": "resources: [repo-server.yaml]\ncomponents: [../throughline, ../throughline/monitoring]\n",
		})
		d, err := acceptance.Declare(context.Background(), acceptance.Request{Render: render.Options{Root: root, Path: "argocd"}})
		if err != nil {
			t.Fatalf("deploy/argocd with the monitoring Component does not pass throughline's own policy: %v", err)
		}
		checkReleasePin(t, "argocd", d.Objects)
		var found []string
		for _, o := range d.Objects {
			kind, _ := o.Map["kind"].(string)
			y, err := yaml.Marshal(o.Map)
			if err != nil {
				t.Fatal(err)
			}
			text := string(y)
			want := map[string][]string{
				"Deployment": {"- --metrics-addr=:9465\n        - --\n        - /var/run/argocd/argocd-cmp-server", "containerPort: 9465",
					"name: tl-metrics", "image: ghcr.io/throughline-dev/throughline:", "mountPath: /home/argocd/cmp-server/plugins"},
				"Service":        {"port: 9465", "targetPort: tl-metrics", "app.kubernetes.io/name: argocd-repo-server"},
				"ServiceMonitor": {"apiVersion: monitoring.coreos.com/v1", "port: tl-metrics", "app.kubernetes.io/component: metrics"},
				"NetworkPolicy":  {"port: 9465", "kubernetes.io/metadata.name: monitoring"},
				"PrometheusRule": {"apiVersion: monitoring.coreos.com/v1", "alert: ThroughlineRenderBudgetKills"},
			}[kind]
			if kind == "Service" && !strings.Contains(text, "throughline-cmp-metrics") {
				continue
			}
			for _, w := range want {
				if !strings.Contains(text, w) {
					t.Errorf("%s %v lacks %q:\n%s", kind, o.Map["metadata"], w, text)
				}
			}
			if len(want) > 0 {
				found = append(found, kind)
			}
		}
		for _, k := range []string{"Deployment", "Service", "ServiceMonitor", "NetworkPolicy", "PrometheusRule"} {
			if !slices.Contains(found, k) {
				t.Errorf("the monitoring Component renders no %s to check", k)
			}
		}
	})
	t.Run("argocd", func(t *testing.T) {
		root := t.TempDir()
		if err := os.CopyFS(filepath.Join(root, "throughline"), os.DirFS(filepath.Join(repoRoot, "deploy", "argocd"))); err != nil {
			t.Fatal(err)
		}
		writeStandInRepoServer(t, root)
		d, err := acceptance.Declare(context.Background(), acceptance.Request{Render: render.Options{Root: root, Path: "argocd"}})
		if err != nil {
			t.Fatalf("deploy/argocd does not pass throughline's own policy: %v", err)
		}
		checkReleasePin(t, "argocd", d.Objects)
	})
}

// checkReleasePin: in the bundles that make release pins (argocd, serve),
// the kustomization has one images: entry for the throughline image, pinned
// by digest, and every rendered throughline image is that reference, so the
// release pin (throughline pin --set) reaches every container. The other
// bundles have no such entry.
func checkReleasePin(t *testing.T, bundle string, objects []render.Object) {
	t.Helper()
	const repo = "ghcr.io/throughline-dev/throughline"
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy", bundle, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Images []struct {
			Name, NewName, NewTag, Digest string
		}
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatalf("deploy/%s/kustomization.yaml: %v", bundle, err)
	}
	var tags []string
	for _, im := range k.Images {
		if im.Name == repo {
			if im.NewName != "" || im.Digest != "" {
				t.Errorf("deploy/%s/kustomization.yaml: the %s entry sets newName or digest; make release writes only newTag", bundle, repo)
			}
			tags = append(tags, im.NewTag)
		}
	}
	if bundle != "argocd" && bundle != "serve" {
		if len(tags) != 0 {
			t.Errorf("deploy/%s has an images: entry for %s that make release does not pin", bundle, repo)
		}
		return
	}
	if len(tags) != 1 {
		t.Fatalf("deploy/%s/kustomization.yaml: want one images: entry for %s, found %d", bundle, repo, len(tags))
	}
	if !pinnedTag.MatchString(tags[0]) {
		t.Fatalf("deploy/%s/kustomization.yaml: newTag %q is not TAG@sha256:<64 hex>", bundle, tags[0])
	}
	want := repo + ":" + tags[0]
	n := 0
	for _, o := range objects {
		walkImages(o.Map, func(image string) {
			if strings.HasPrefix(image, repo+":") || strings.HasPrefix(image, repo+"@") {
				n++
				if image != want {
					t.Errorf("deploy/%s renders %s, want the release pin %s", bundle, image, want)
				}
			}
		})
	}
	if n == 0 {
		t.Errorf("deploy/%s renders no %s image", bundle, repo)
	}
}

var pinnedTag = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}@sha256:[0-9a-f]{64}$`)

// TestTenancyTemplates: the least-privilege templates under deploy/tenancy,
// instantiated as their comments say, are exactly the example's AppProjects
// (examples/gitops-env/clusters/<env>/project.yaml, which throughline check
// and the Argo CD e2e suites judge and run) and its Flux files
// (examples/flux/clusters/<env>/checkout.yaml, which the Flux e2e suites
// apply and run through impersonation): the templates are what is tested.
func TestTenancyTemplates(t *testing.T) {
	docs := func(t *testing.T, data string) []any {
		var out []any
		for _, d := range strings.Split(data, "\n---\n") {
			var v any
			if err := yaml.Unmarshal([]byte(d), &v); err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		return out
	}
	read := func(t *testing.T, p ...string) string {
		b, err := os.ReadFile(filepath.Join(append([]string{repoRoot}, p...)...))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, env := range []string{"staging", "production"} {
		vars := map[string]string{"ENVIRONMENT": env, "APP": "checkout", "SERVER": "https://kubernetes.default.svc",
			"REPO_URL": "https://git.example.test/platform/gitops-env.git"}
		expand := func(s string) string {
			return os.Expand(s, func(k string) string {
				v, ok := vars[k]
				if !ok {
					t.Fatalf("template variable %s is not documented", k)
				}
				return v
			})
		}
		for _, c := range []struct{ template, instance []string }{
			{[]string{"deploy", "tenancy", "appproject.yaml"}, []string{"examples", "gitops-env", "clusters", env, "project.yaml"}},
			{[]string{"deploy", "tenancy", "flux-tenant.yaml"}, []string{"examples", "flux", "clusters", env, "checkout.yaml"}},
		} {
			got, want := docs(t, expand(read(t, c.template...))), docs(t, read(t, c.instance...))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s instantiated for %s is not %s:\n%v\n%v", filepath.Join(c.template...), env, filepath.Join(c.instance...), got, want)
			}
		}
	}
}
