package checkfile

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/policy"
)

// validate judges the decoded checks: every failure a *FieldError, an
// unpinned Job image a *policy.Refusal naming file.
func validate(file string, rc *v1alpha1.RuntimeChecks, opts Options) error {
	seen := map[string]int{}
	for i := range rc.Checks {
		c := &rc.Checks[i]
		field := fmt.Sprintf("checks[%d]", i)
		if errs := validation.IsDNS1123Label(c.Name); len(errs) > 0 {
			return fieldErr(field+".name", "%q is not a DNS label: %s", c.Name, strings.Join(errs, "; "))
		}
		if j, dup := seen[c.Name]; dup {
			return fieldErr(field+".name", "%q is named twice (checks[%d].name)", c.Name, j)
		}
		seen[c.Name] = i
		if d := c.Interval.Duration; d != 0 && d < minInterval {
			return fieldErr(field+".interval", "%s: at least %s (zero means 30s)", d, MinInterval)
		}
		if c.FailureThreshold < 0 {
			return fieldErr(field+".failureThreshold", "%d: must not be negative (zero means 1)", c.FailureThreshold)
		}
		var err error
		switch {
		case c.Prometheus != nil:
			err = checkPrometheus(field+".prometheus", c.Prometheus, opts.ParseQuery)
		case c.HTTP != nil:
			if err = checkHTTP(field+".http", c.HTTP); err == nil {
				err = checkNamespace(file, field+".http.service.namespace", c.Name, c.HTTP.Service.Namespace, opts)
			}
		case c.Job != nil:
			err = checkJob(file, field+".job", c.Job)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

var minInterval = mustDuration(MinInterval)

func mustDuration(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// comparisons are the values of op.
var comparisons = []v1alpha1.Comparison{
	v1alpha1.ComparisonLess, v1alpha1.ComparisonLessEqual, v1alpha1.ComparisonGreater,
	v1alpha1.ComparisonGreaterEqual, v1alpha1.ComparisonEqual, v1alpha1.ComparisonNotEqual,
}

func checkPrometheus(field string, p *v1alpha1.PrometheusCheck, parse QueryParser) error {
	switch {
	case strings.TrimSpace(p.Query) == "":
		return fieldErr(field+".query", "empty: a PromQL query is required")
	case len(p.Query) > MaxQueryLength:
		return fieldErr(field+".query", "%d bytes: at most %d", len(p.Query), MaxQueryLength)
	}
	if err := parse(p.Query); err != nil {
		return &FieldError{Field: field + ".query", Err: err}
	}
	for _, c := range comparisons {
		if p.Op == c {
			return nil
		}
	}
	return fieldErr(field+".op", "%q: want one of %q", p.Op, comparisons)
}

func checkHTTP(field string, h *v1alpha1.HTTPCheck) error {
	s := h.Service
	if errs := validation.IsDNS1035Label(s.Name); len(errs) > 0 {
		return fieldErr(field+".service.name", "%q is not a Service name (a DNS label): %s", s.Name, strings.Join(errs, "; "))
	}
	if s.Port < 1 || s.Port > 65535 {
		return fieldErr(field+".service.port", "%d: want a Service port number in 1..65535", s.Port)
	}
	if s.Namespace != "" {
		if errs := validation.IsDNS1123Label(s.Namespace); len(errs) > 0 {
			return fieldErr(field+".service.namespace", "%q is not a namespace name: %s", s.Namespace, strings.Join(errs, "; "))
		}
	}
	if err := checkPath(h.Path); err != nil {
		return &FieldError{Field: field + ".path", Err: err}
	}
	if h.ExpectStatus != 0 && (h.ExpectStatus < 100 || h.ExpectStatus > 599) {
		return fieldErr(field+".expectStatus", "%d: want an HTTP status in 100..599 (zero means 200)", h.ExpectStatus)
	}
	if len(h.BodyMatch) > MaxBodyMatch {
		return fieldErr(field+".bodyMatch", "%d bytes: at most %d", len(h.BodyMatch), MaxBodyMatch)
	}
	if _, err := regexp.Compile(h.BodyMatch); err != nil {
		return fieldErr(field+".bodyMatch", "not an RE2 regular expression: %w", err)
	}
	return nil
}

// checkNamespace refuses a probe of a namespace the app does not own: ns
// (empty: the Acceptance's own) must be opts.Namespace or one the registry
// binds to opts.App in opts.Environment.
func checkNamespace(file, field, check, ns string, opts Options) error {
	if ns == "" || ns == opts.Namespace || opts.AnyNamespace {
		return nil
	}
	e := opts.Environment
	if e != nil && e.BindsNamespace(opts.App, ns) {
		return nil
	}
	own := "the Acceptance's namespace is not known at render, so a probe may name none"
	if opts.Namespace != "" {
		own = fmt.Sprintf("the app's namespace is %q", opts.Namespace)
	}
	bound := "no environment registry binds another namespace to it"
	if e != nil {
		bound = fmt.Sprintf("environment %s binds none else to app %q (namespaces %q, \"*\" standing for the app's name)", e.Name, opts.App, e.Namespaces)
	}
	return &policy.Refusal{Violations: []policy.Violation{{
		Rule: RuleCheckNamespace, File: file, Field: field, Value: ns,
		Reason: fmt.Sprintf("check %s probes a Service in namespace %q, which the app does not own: %s, and %s", check, ns, own, bound),
	}}}
}

// checkPath accepts an absolute request path with an optional query: no
// scheme, no host, nothing a client could read as another server.
func checkPath(p string) error {
	switch {
	case len(p) > MaxPathLength:
		return fmt.Errorf("%d bytes: at most %d", len(p), MaxPathLength)
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q: a request path starts with \"/\" (the probe goes to the Service, never to a URL)", p)
	case strings.HasPrefix(p, "//"):
		return fmt.Errorf("%q: \"//\" starts a host, not a path", p)
	case strings.Contains(p, "://") || strings.Contains(strings.ToLower(p), "%3a%2f%2f"):
		return fmt.Errorf("%q: a scheme has no place in a probe's path (only the cluster's Services are probed)", p)
	case strings.ContainsFunc(p, func(r rune) bool { return r == '\\' || r == '#' || unicode.IsSpace(r) || !unicode.IsPrint(r) }):
		return fmt.Errorf("%q: a backslash, fragment, space or control character in the path", p)
	}
	u, err := url.ParseRequestURI(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return fmt.Errorf("%q: not a request path", p)
	}
	return nil
}

func checkJob(file, field string, j *v1alpha1.JobCheck) error {
	if _, err := policy.CheckImage(j.Image); err != nil {
		reason := err.Error()
		var ie *policy.ImageError
		if errors.As(err, &ie) {
			reason = ie.Reason
		}
		return &policy.Refusal{Violations: []policy.Violation{{
			Rule: policy.RuleUnpinnedImage, File: file, Field: field + ".image", Value: j.Image,
			Reason: "the smoke-test Job's image " + reason,
		}}}
	}
	if len(j.Command)+len(j.Args) > MaxJobArgs {
		return fieldErr(field+".args", "%d command and args elements: at most %d", len(j.Command)+len(j.Args), MaxJobArgs)
	}
	if j.ServiceAccountName != "" {
		if errs := validation.IsDNS1123Subdomain(j.ServiceAccountName); len(errs) > 0 {
			return fieldErr(field+".serviceAccountName", "%q is not a ServiceAccount name: %s", j.ServiceAccountName, strings.Join(errs, "; "))
		}
	}
	return nil
}
