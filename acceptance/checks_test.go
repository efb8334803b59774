package acceptance

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile"
)

const checksPolicy = `apiVersion: throughline.dev/v1alpha1
kind: PromotionPolicy
environments:
  staging:
    paths: ["apps/*/overlays/staging"]
    namespaces: [shop, "shared-*"]
    reconcileDeadline: 15m
    rolloutDeadline: 10m
  production:
    paths: ["apps/*/overlays/production"]
    namespaces: [shop-production]
`

const checksFile = `apiVersion: throughline.dev/v1alpha1
kind: RuntimeChecks
soak: 5m
checks:
  - name: error-ratio
    prometheus:
      query: sum(rate(http_requests_total{code=~"5.."}[5m])) / sum(rate(http_requests_total[5m]))
      op: "<"
      threshold: 0.01
  - name: healthz
    http:
      service: {name: web, port: 8080}
      path: /healthz
`

// checksRepo is a repository with a registry and the staging overlay of
// app a; files are added to it.
func checksRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	all := map[string]string{
		"throughline-policy.yaml":                 checksPolicy,
		"apps/a/overlays/staging/deployment.yaml": testDeployment,
	}
	for k, v := range files {
		all[k] = v
	}
	writeTestFiles(t, root, all)
	return root
}

func declareStaging(t *testing.T, root string, parse checkfile.QueryParser) (*Declaration, error) {
	t.Helper()
	return Declare(context.Background(), Request{
		Render:      render.Options{Root: root, Path: filepath.Join(root, "apps", "a", "overlays", "staging")},
		Environment: "staging", ParseQuery: parse,
	})
}

// TestDeclareChecks: the overlay's checks and the environment's deadlines
// are in the Acceptance; without a checks file spec.checks is absent.
func TestDeclareChecks(t *testing.T) {
	d, err := declareStaging(t, checksRepo(t, map[string]string{"apps/a/overlays/staging/" + checkfile.File: checksFile}), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := d.Acceptance.Spec.Checks
	if c == nil || len(c.Checks) != 2 || c.Soak.Duration != 5*time.Minute || c.Checks[0].Prometheus.Threshold != 0.01 {
		t.Fatalf("spec.checks = %+v", c)
	}
	dl := d.Acceptance.Spec.Deadlines
	if dl == nil || dl.Rollout.Duration != 10*time.Minute || dl.ObservedRevision.Duration != 15*time.Minute {
		t.Fatalf("spec.deadlines = %+v", dl)
	}
	obj, err := ToObject(&d.Acceptance)
	if err != nil {
		t.Fatal(err)
	}
	back, err := FromObject(obj)
	if err != nil || back.Spec.Checks == nil || back.Spec.Checks.Checks[1].HTTP.Path != "/healthz" {
		t.Fatalf("round trip: %v %+v", err, back)
	}

	d, err = declareStaging(t, checksRepo(t, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Acceptance.Spec.Checks != nil {
		t.Errorf("no checks file: spec.checks = %+v", d.Acceptance.Spec.Checks)
	}
}

// TestDeclareChecksRefused: a bad checks file refuses the render (exit 4
// naming the file and field), a probe into another environment's
// namespace too, and the query parser given is the one used.
func TestDeclareChecksRefused(t *testing.T) {
	t.Parallel()
	file := "apps/a/overlays/staging/" + checkfile.File
	for _, tc := range []struct {
		name, body, field string
		parse             checkfile.QueryParser
	}{
		{"threshold a percentage", strings.Replace(checksFile, "threshold: 0.01", "threshold: 1%", 1), "checks[0].prometheus.threshold", nil},
		{"the caller's query parser", checksFile, "checks[0].prometheus.query", func(string) error { return errors.New("1:3: parse error") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := declareStaging(t, checksRepo(t, map[string]string{file: tc.body}), tc.parse)
			if exitcode.Code(err) != exitcode.Invalid || !strings.Contains(err.Error(), file+": "+tc.field+":") {
				t.Fatalf("err = %v, want exit 4 naming %s and %s", err, file, tc.field)
			}
		})
	}
}

// TestDeclareChecksOtherTenant: a probe into a namespace the registry does
// not bind to the app (another environment's, a shared-* namespace of
// another app, kube-system) refuses the render, rule check-namespace.
func TestDeclareChecksOtherTenant(t *testing.T) {
	t.Parallel()
	file := "apps/a/overlays/staging/" + checkfile.File
	for _, ns := range []string{"shop-production", "shared-b", "kube-system"} {
		t.Run(ns, func(t *testing.T) {
			body := strings.Replace(checksFile, "{name: web, port: 8080}", "{namespace: "+ns+", name: web, port: 8080}", 1)
			_, err := declareStaging(t, checksRepo(t, map[string]string{file: body}), nil)
			var r *policy.Refusal
			if exitcode.Code(err) != exitcode.Refused || !errors.As(err, &r) || r.Violations[0].Rule != checkfile.RuleCheckNamespace ||
				r.Violations[0].File != file || r.Violations[0].Field != "checks[1].http.service.namespace" {
				t.Fatalf("err = %v, want a check-namespace refusal naming %s", err, file)
			}
		})
	}
	body := strings.Replace(checksFile, "{name: web, port: 8080}", "{namespace: shared-a, name: web, port: 8080}", 1)
	if _, err := declareStaging(t, checksRepo(t, map[string]string{file: body}), nil); err != nil {
		t.Fatalf("shared-a, bound to app a by shared-*: %v", err)
	}
}

// TestCommittedAcceptanceStaleOnChecks: on the Flux path the committed
// Acceptance carries the checks; changing a threshold makes it stale.
func TestCommittedAcceptanceStaleOnChecks(t *testing.T) {
	t.Parallel()
	file := "apps/a/overlays/staging/" + checkfile.File
	root := checksRepo(t, map[string]string{file: checksFile, "apps/a/overlays/staging/kustomization.yaml": "resources: [deployment.yaml]\n"})
	d, err := declareStaging(t, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.WriteFile(); err != nil {
		t.Fatal(err)
	}
	if d, err = declareStaging(t, root, nil); err != nil || d.Stale() != "" {
		t.Fatalf("after writing: %v, stale %q", err, d.Stale())
	}
	writeTestFiles(t, root, map[string]string{file: strings.Replace(checksFile, "threshold: 0.01", "threshold: 0.5", 1)})
	d, err = declareStaging(t, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if why := d.Stale(); why == "" {
		t.Fatal("a changed threshold leaves the committed Acceptance current")
	}
	if d.Hash == "" || d.Acceptance.Spec.Checks.Checks[0].Prometheus.Threshold != 0.5 {
		t.Fatalf("declared %+v", d.Acceptance.Spec.Checks)
	}
	if err := d.WriteFile(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "apps", "a", "overlays", "staging", File))
	if err != nil || !strings.Contains(string(data), "threshold: 0.5") || !strings.Contains(string(data), "rollout: 10m0s") {
		t.Fatalf("committed Acceptance:\n%s", data)
	}
}
