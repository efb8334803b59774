package checkfile_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

const head = "apiVersion: throughline.dev/v1alpha1\nkind: RuntimeChecks\n"

// good is a file every check kind of which is valid.
const good = head + `soak: 10m
checks:
  - name: error-ratio
    interval: 30s
    failureThreshold: 3
    unverifiableAfter: 20m
    prometheus:
      query: sum(rate(http_requests_total{job="checkout",code=~"5.."}[5m])) / sum(rate(http_requests_total{job="checkout"}[5m]))
      op: "<"
      threshold: 0.01
  - name: p99-latency
    prometheus:
      query: histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{job="checkout"}[5m])))
      op: "<="
      threshold: .25
  - name: healthz
    http:
      service: {name: checkout, port: 8080}
      path: /healthz?full=1
      expectStatus: 200
      bodyMatch: '^ok\b'
      maxLatency: 500ms
  - name: smoke
    job:
      image: registry.example.test/checkout-smoke:1.0@` + digest + `
      args: ["--target", "http://checkout:8080"]
      deadline: 2m
`

// registry returns the staging environment of a registry that owns the
// namespaces checkout-staging and shared-*.
func registry(t *testing.T) *environment.Environment {
	t.Helper()
	pol := &v1alpha1.PromotionPolicy{Environments: map[string]v1alpha1.EnvironmentPolicy{
		"staging":    {Paths: []string{"apps/*/overlays/staging"}, Namespaces: []string{"checkout-staging", "shared-*"}},
		"production": {Paths: []string{"apps/*/overlays/production"}, Namespaces: []string{"checkout-prod"}},
	}}
	reg, err := environment.New("throughline-policy.yaml", pol)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := reg.Get("staging")
	if !ok {
		t.Fatal("no staging")
	}
	return e
}

func opts(t *testing.T) checkfile.Options {
	return checkfile.Options{Environment: registry(t), Namespace: "checkout-staging"}
}

func TestParseGood(t *testing.T) {
	t.Parallel()
	rc, err := checkfile.Parse("apps/checkout/overlays/staging/throughline-checks.yaml", []byte(good), opts(t))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if rc.Soak.Duration.String() != "10m0s" || len(rc.Checks) != 4 {
		t.Fatalf("soak %s, %d checks", rc.Soak.Duration, len(rc.Checks))
	}
	if p := rc.Checks[1].Prometheus; p == nil || p.Threshold != 0.25 || p.Op != v1alpha1.ComparisonLessEqual {
		t.Errorf("checks[1].prometheus = %+v", p)
	}
	if h := rc.Checks[2].HTTP; h == nil || h.Service.Port != 8080 || h.Service.Namespace != "" || h.MaxLatency.Duration.String() != "500ms" {
		t.Errorf("checks[2].http = %+v", h)
	}
	if rc.Checks[0].FailureThreshold != 3 || rc.Checks[0].Interval.Duration.String() != "30s" || rc.Checks[0].UnverifiableAfter == nil ||
		rc.Checks[0].UnverifiableAfter.Duration != 20*time.Minute || rc.Checks[1].UnverifiableAfter != nil {
		t.Errorf("checks[0] = %+v", rc.Checks[0])
	}
	// A check without unverifiableAfter renders as before it existed: the
	// Acceptance of an app that does not use it does not change.
	raw, err := json.Marshal(rc.Checks[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["unverifiableAfter"]; ok {
		t.Errorf("checks[1] without unverifiableAfter renders it: %s", raw)
	}
}

// check is one check of a file otherwise valid.
func check(body string) string { return head + "checks:\n" + body }

// TestParseHostile: what a careless or hostile contributor commits; each is
// exit 4 naming the file and the field (or exit 3 for an unpinned image).
func TestParseHostile(t *testing.T) {
	t.Parallel()
	const okProm = "    prometheus: {query: up, op: '>', threshold: 0}\n"
	cases := []struct {
		name, file string
		field      string // the field the error names
		want       string // in the message
		code       int    // 0 means exitcode.Invalid
	}{
		{"unknown top-level field", head + "checks: []\nsoakk: 5m\n", "", `unknown field "soakk"`, 0},
		{"unknown field in a check", check("  - name: a\n    intervall: 5s\n" + okProm), "checks[0]", `unknown field "intervall"`, 0},
		{"unknown field in prometheus", check("  - name: a\n    prometheus: {query: up, op: '>', threshold: 0, url: http://evil}\n"),
			"checks[0].prometheus", `unknown field "url"`, 0},
		{"unknown field in http.service", check("  - name: a\n    http: {service: {name: s, port: 80, host: evil.example}, path: /}\n"),
			"checks[0].http.service", `unknown field "host"`, 0},
		{"wrong kind", "apiVersion: throughline.dev/v1alpha1\nkind: Acceptance\nchecks: []\n", "kind", "RuntimeChecks", 0},
		{"not YAML", head + "checks: [\n", "", "YAML", 0},
		{"duplicate key", head + "soak: 1m\nsoak: 2m\nchecks: []\n", "", "", 0},
		{"no checks", head + "soak: 1m\n", "checks", "at least one", 0},
		{"negative soak", head + "soak: -5m\nchecks:\n  - name: a\n" + okProm, "soak", "negative", 0},
		{"soak not a duration", head + "soak: forever\nchecks:\n  - name: a\n" + okProm, "soak", "duration", 0},
		{"name not a DNS label", check("  - name: Error_Ratio\n" + okProm), "checks[0].name", "DNS label", 0},
		{"name missing", check("  - interval: 5s\n" + okProm), "checks[0].name", "DNS label", 0},
		{"duplicate names", check("  - name: a\n" + okProm + "  - name: a\n" + okProm), "checks[1].name", "twice", 0},
		{"no kind of check", check("  - name: a\n    interval: 5s\n"), "checks[0]", "exactly one of prometheus, http, job", 0},
		{"two kinds of check", check("  - name: a\n" + okProm + "    http: {service: {name: s, port: 80}, path: /}\n"),
			"checks[0]", "exactly one of prometheus, http, job", 0},
		{"null kind of check", check("  - name: a\n    prometheus: null\n"), "checks[0]", "exactly one", 0},
		{"negative interval", check("  - name: a\n    interval: -1s\n" + okProm), "checks[0].interval", "", 0},
		{"interval below a second", check("  - name: a\n    interval: 1ns\n" + okProm), "checks[0].interval", "at least 1s", 0},
		{"negative failureThreshold", check("  - name: a\n    failureThreshold: -1\n" + okProm), "checks[0].failureThreshold", "negative", 0},
		{"failureThreshold a string", check("  - name: a\n    failureThreshold: three\n" + okProm), "checks[0].failureThreshold", "integer", 0},
		{"failureThreshold a fraction", check("  - name: a\n    failureThreshold: 1.5\n" + okProm), "checks[0].failureThreshold", "integer", 0},
		{"negative unverifiableAfter", check("  - name: a\n    unverifiableAfter: -10m\n" + okProm), "checks[0].unverifiableAfter", "negative", 0},
		{"unverifiableAfter not a duration", check("  - name: a\n    unverifiableAfter: forever\n" + okProm), "checks[0].unverifiableAfter", "duration", 0},
		{"unverifiableAfter a number", check("  - name: a\n    unverifiableAfter: 600\n" + okProm), "checks[0].unverifiableAfter", "duration", 0},
		{"malformed PromQL", check("  - name: a\n    prometheus: {query: 'sum(rate(x[5m])', op: '<', threshold: 1}\n"),
			"checks[0].prometheus.query", "", 0},
		{"empty PromQL", check("  - name: a\n    prometheus: {query: '', op: '<', threshold: 1}\n"), "checks[0].prometheus.query", "empty", 0},
		{"unclosed string in PromQL", check("  - name: a\n    prometheus: {query: 'up{job=\"x}', op: '<', threshold: 1}\n"),
			"checks[0].prometheus.query", "", 0},
		{"op not in the enum", check("  - name: a\n    prometheus: {query: up, op: '=~', threshold: 1}\n"), "checks[0].prometheus.op", "=~", 0},
		{"op missing", check("  - name: a\n    prometheus: {query: up, threshold: 1}\n"), "checks[0].prometheus.op", "", 0},
		{"threshold a word", check("  - name: a\n    prometheus: {query: up, op: '<', threshold: abc}\n"),
			"checks[0].prometheus.threshold", `not a number: "abc"`, 0},
		{"threshold a percentage", check("  - name: a\n    prometheus: {query: up, op: '<', threshold: 1%}\n"),
			"checks[0].prometheus.threshold", `not a number: "1%"`, 0},
		{"threshold quoted number", check("  - name: a\n    prometheus: {query: up, op: '<', threshold: '0.5'}\n"),
			"checks[0].prometheus.threshold", "not a number", 0},
		{"threshold a list", check("  - name: a\n    prometheus: {query: up, op: '<', threshold: [1]}\n"),
			"checks[0].prometheus.threshold", "not a number", 0},
		{"threshold missing", check("  - name: a\n    prometheus: {query: up, op: '<'}\n"), "checks[0].prometheus.threshold", "required", 0},
		{"threshold not finite", check("  - name: a\n    prometheus: {query: up, op: '<', threshold: .inf}\n"), "", "Inf", 0},
		{"query a number", check("  - name: a\n    prometheus: {query: 5, op: '<', threshold: 1}\n"), "checks[0].prometheus.query", "string", 0},
		{"http URL in the path", check("  - name: a\n    http: {service: {name: s, port: 80}, path: 'http://evil.example/'}\n"),
			"checks[0].http.path", "", 0},
		{"http protocol-relative path", check("  - name: a\n    http: {service: {name: s, port: 80}, path: '//evil.example/x'}\n"),
			"checks[0].http.path", "", 0},
		{"http path with a backslash host", check("  - name: a\n    http: {service: {name: s, port: 80}, path: '/\\evil.example'}\n"),
			"checks[0].http.path", "", 0},
		{"http path with a scheme inside", check("  - name: a\n    http: {service: {name: s, port: 80}, path: '/redirect?to=https://evil.example'}\n"),
			"checks[0].http.path", "", 0},
		{"http path without slash", check("  - name: a\n    http: {service: {name: s, port: 80}, path: healthz}\n"), "checks[0].http.path", "/", 0},
		{"http path with a space", check("  - name: a\n    http: {service: {name: s, port: 80}, path: '/a b'}\n"), "checks[0].http.path", "", 0},
		{"http service a host name", check("  - name: a\n    http: {service: {name: evil.example.com, port: 80}, path: /}\n"),
			"checks[0].http.service.name", "DNS label", 0},
		{"http service a URL", check("  - name: a\n    http: {service: {name: 'http://evil', port: 80}, path: /}\n"),
			"checks[0].http.service.name", "DNS label", 0},
		{"http port zero", check("  - name: a\n    http: {service: {name: s, port: 0}, path: /}\n"), "checks[0].http.service.port", "1..65535", 0},
		{"http port too big", check("  - name: a\n    http: {service: {name: s, port: 70000}, path: /}\n"), "checks[0].http.service.port", "1..65535", 0},
		{"http port a name", check("  - name: a\n    http: {service: {name: s, port: http}, path: /}\n"), "checks[0].http.service.port", "integer", 0},
		{"http namespace not a label", check("  - name: a\n    http: {service: {namespace: 'a/b', name: s, port: 80}, path: /}\n"),
			"checks[0].http.service.namespace", "", 0},
		{"http bodyMatch not RE2", check("  - name: a\n    http: {service: {name: s, port: 80}, path: /, bodyMatch: '(?=x)'}\n"),
			"checks[0].http.bodyMatch", "", 0},
		{"http expectStatus out of range", check("  - name: a\n    http: {service: {name: s, port: 80}, path: /, expectStatus: 999}\n"),
			"checks[0].http.expectStatus", "", 0},
		{"http negative maxLatency", check("  - name: a\n    http: {service: {name: s, port: 80}, path: /, maxLatency: -1s}\n"),
			"checks[0].http.maxLatency", "", 0},
		{"job image unpinned", check("  - name: a\n    job: {image: 'registry.example.test/smoke:1.0'}\n"),
			"checks[0].job.image", "pinned by tag", exitcode.Refused},
		{"job image latest", check("  - name: a\n    job: {image: 'busybox'}\n"), "checks[0].job.image", "latest", exitcode.Refused},
		{"job negative deadline", check("  - name: a\n    job: {image: 'r.example.test/s@" + digest + "', deadline: -2m}\n"),
			"checks[0].job.deadline", "", 0},
		{"job service account not a name", check("  - name: a\n    job: {image: 'r.example.test/s@" + digest + "', serviceAccountName: 'A B'}\n"),
			"checks[0].job.serviceAccountName", "", 0},
		{"second check bad", check("  - name: a\n" + okProm + "  - name: b\n    prometheus: {query: up, op: '<', threshold: x}\n"),
			"checks[1].prometheus.threshold", "", 0},
	}
	const file = "apps/checkout/overlays/staging/throughline-checks.yaml"
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkfile.Parse(file, []byte(tc.file), opts(t))
			if err == nil {
				t.Fatal("accepted")
			}
			want := tc.code
			if want == 0 {
				want = exitcode.Invalid
			}
			if got := exitcode.Code(err); got != want {
				t.Fatalf("exit %d, want %d: %v", got, want, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, file) {
				t.Errorf("message does not name the file: %s", msg)
			}
			if tc.field != "" && !strings.Contains(msg, tc.field+":") && !strings.Contains(msg, tc.field+" ") {
				t.Errorf("message does not name the field %s: %s", tc.field, msg)
			}
			if tc.want != "" && !strings.Contains(msg, tc.want) {
				t.Errorf("message lacks %q: %s", tc.want, msg)
			}
			if strings.Contains(msg, "json: cannot unmarshal") || strings.Contains(msg, "Go struct") {
				t.Errorf("message is Go's unmarshal error: %s", msg)
			}
			if want == exitcode.Refused {
				var r *policy.Refusal
				if !errors.As(err, &r) || r.Violations[0].Rule != policy.RuleUnpinnedImage {
					t.Errorf("not an unpinned-image refusal: %v", err)
				}
			}
			var fe *checkfile.FieldError
			if tc.field != "" && want == exitcode.Invalid && (!errors.As(err, &fe) || fe.Field != tc.field) {
				t.Errorf("FieldError.Field = %v, want %s", fe, tc.field)
			}
		})
	}
}

// TestParseNamespace attacks the tenant rule as another team's
// contributor would: an HTTP check may name its own (the Acceptance's)
// namespace, or one the registry binds to its app (a pattern's "*" is the
// app's name; a literal namespace is shared by the environment's apps);
// another app's namespace matching the environment's pattern, another
// environment's, kube-system, or (without a registry) anything but its
// own is refused with rule check-namespace, exit 3, naming the file, the
// check, the field and the namespace.
func TestParseNamespace(t *testing.T) {
	t.Parallel()
	pol := &v1alpha1.PromotionPolicy{Environments: map[string]v1alpha1.EnvironmentPolicy{
		"staging":    {Paths: []string{"apps/*/overlays/staging"}, Namespaces: []string{"*-staging", "shared-cache"}},
		"production": {Paths: []string{"apps/*/overlays/production"}, Namespaces: []string{"*-production"}},
	}}
	reg, err := environment.New("throughline-policy.yaml", pol)
	if err != nil {
		t.Fatal(err)
	}
	staging, _ := reg.Get("staging")
	withReg := checkfile.Options{Environment: staging, App: "checkout", Namespace: "checkout-staging"}
	noReg := checkfile.Options{App: "checkout", Namespace: "checkout"}
	const file = "apps/checkout/overlays/staging/throughline-checks.yaml"
	const okProm = "    prometheus: {query: up, op: '>', threshold: 0}\n"
	for _, tc := range []struct {
		name, ns string
		o        checkfile.Options
		ok       bool
	}{
		{"registry: default namespace", "", withReg, true},
		{"registry: its own namespace", "checkout-staging", withReg, true},
		{"registry: a shared namespace the environment lists", "shared-cache", withReg, true},
		{"registry: another app's namespace matching the pattern", "payments-staging", withReg, false},
		{"registry: another environment's namespace", "checkout-production", withReg, false},
		{"registry: kube-system", "kube-system", withReg, false},
		{"registry: no app, a pattern binds nothing", "checkout-staging", checkfile.Options{Environment: staging, Namespace: "x"}, false},
		{"no registry: default namespace", "", noReg, true},
		{"no registry: its own namespace", "checkout", noReg, true},
		{"no registry: kube-system", "kube-system", noReg, false},
		{"no registry: a namespace like its own", "checkout-staging", noReg, false},
		{"no registry, no Acceptance namespace: any namespace", "checkout", checkfile.Options{App: "checkout"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := "{name: s, port: 80}"
			if tc.ns != "" {
				svc = "{namespace: " + tc.ns + ", name: s, port: 80}"
			}
			f := check("  - name: ok\n" + okProm + "  - name: probe-it\n    http: {service: " + svc + ", path: /}\n")
			_, err := checkfile.Parse(file, []byte(f), tc.o)
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var r *policy.Refusal
			if exitcode.Code(err) != exitcode.Refused || !errors.As(err, &r) || len(r.Violations) != 1 {
				t.Fatalf("exit %d %v; want a refusal (exit 3)", exitcode.Code(err), err)
			}
			v := r.Violations[0]
			if v.Rule != checkfile.RuleCheckNamespace || v.File != file || v.Field != "checks[1].http.service.namespace" || v.Value != tc.ns ||
				!strings.Contains(v.Reason, "probe-it") {
				t.Fatalf("violation %+v: want rule %s, the file, the field, the namespace and the check's name", v, checkfile.RuleCheckNamespace)
			}
		})
	}
}

// TestParseQueryParser: the query parser given is the one used, and its
// message (the position) reaches the error.
func TestParseQueryParser(t *testing.T) {
	t.Parallel()
	o := opts(t)
	o.ParseQuery = func(q string) error { return errors.New("1:5: parse error: unexpected end of input") }
	_, err := checkfile.Parse("f.yaml", []byte(good), o)
	if err == nil || !strings.Contains(err.Error(), "checks[0].prometheus.query: 1:5: parse error") {
		t.Errorf("err = %v", err)
	}
}

// TestReadConfined: the file is read through the render's confined
// filesystem: absent is nil, a symlink out of the root is refused, and a
// file above the size cap too.
func TestReadConfined(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	dir := filepath.Join(root, "apps", "checkout", "overlays", "staging")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fsys, err := render.NewConfinedFS(root, 4096, nil)
	if err != nil {
		t.Fatal(err)
	}
	rel := "apps/checkout/overlays/staging"
	rc, err := checkfile.Read(fsys, rel, opts(t))
	if err != nil || rc != nil {
		t.Fatalf("absent file: %v, %v", rc, err)
	}
	if err := os.WriteFile(filepath.Join(outside, "c.yaml"), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "c.yaml"), filepath.Join(dir, checkfile.File)); err != nil {
		t.Fatal(err)
	}
	if _, err := checkfile.Read(fsys, rel, opts(t)); exitcode.Code(err) != exitcode.Invalid || !errors.Is(err, render.ErrOutsideRoot) {
		t.Errorf("symlink out of the root: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, checkfile.File)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, checkfile.File), []byte(good+strings.Repeat("# pad\n", 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := checkfile.Read(fsys, rel, opts(t)); exitcode.Code(err) != exitcode.Invalid || !errors.Is(err, render.ErrTooLarge) {
		t.Errorf("file above the cap: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, checkfile.File), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	if rc, err := checkfile.Read(fsys, rel, opts(t)); err != nil || len(rc.Checks) != 4 {
		t.Errorf("the file: %v, %v", rc, err)
	}
}
