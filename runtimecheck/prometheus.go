package runtimecheck

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// NoPrometheus is the message of a Prometheus check evaluated by a verifier
// that has no Prometheus configured.
const NoPrometheus = "no Prometheus configured: start throughline serve with --prometheus-url"

// PrometheusConfig says how to reach Prometheus. At most one of Token and
// Username/Password is set; neither is ever printed.
type PrometheusConfig struct {
	// URL is the base URL of the Prometheus HTTP API (http:// or https://).
	URL string
	// Token is sent as "Authorization: Bearer <token>".
	Token string
	// Username and Password are sent as HTTP basic authentication.
	Username, Password string
	// CA is PEM certificates trusted besides the system's.
	CA []byte
}

// Prometheus evaluates PromQL checks through the Prometheus HTTP API (the
// official client library's api package). A nil *Prometheus, or one without
// an API, evaluates every check as Unverifiable.
type Prometheus struct {
	API promv1.API
	// Now is the clock of the instant queries (default time.Now).
	Now func() time.Time
}

// NewPrometheus returns the client of cfg.
func NewPrometheus(cfg PrometheusConfig) (*Prometheus, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("prometheus URL %q: want http(s)://host[:port][/path]", redactURL(cfg.URL))
	}
	if u.User != nil {
		return nil, fmt.Errorf("prometheus URL %s: credentials belong in the Secret, not in the URL", redactURL(cfg.URL))
	}
	if cfg.Token != "" && (cfg.Username != "" || cfg.Password != "") {
		return nil, errors.New("prometheus credentials: a token or a username and password, not both")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if len(cfg.CA) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(cfg.CA) {
			return nil, errors.New("prometheus CA: no PEM certificate found")
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	c, err := api.NewClient(api.Config{Address: cfg.URL, RoundTripper: &authTransport{base: tr, cfg: cfg}})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %s: %w", redactURL(cfg.URL), err)
	}
	return &Prometheus{API: promv1.NewAPI(c)}, nil
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<unparsable URL>"
	}
	return u.Redacted()
}

// authTransport adds the credentials to every request.
type authTransport struct {
	base http.RoundTripper
	cfg  PrometheusConfig
}

func (a *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if a.cfg.Token == "" && a.cfg.Username == "" && a.cfg.Password == "" {
		return a.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	if a.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+a.cfg.Token)
	} else {
		req.SetBasicAuth(a.cfg.Username, a.cfg.Password)
	}
	return a.base.RoundTrip(req)
}

// Evaluate runs the check's instant query and compares its one sample with
// the threshold. Whatever keeps the comparison from being made (Prometheus
// unreachable, an error or 5xx answer, a timeout, warnings, zero or several
// samples, NaN) is Unverifiable, never Passed or Failed.
func (p *Prometheus) Evaluate(ctx context.Context, c *v1alpha1.PrometheusCheck, timeout time.Duration) Result {
	if p == nil || p.API == nil {
		return unverifiable(NoPrometheus)
	}
	if !validOp(c.Op) {
		return unverifiable(fmt.Sprintf("op %q is not one of < <= > >= == !=", c.Op))
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	val, warnings, _, err := p.API.Query(ctx, c.Query, now(), promv1.WithTimeout(timeout)) // infos are informational
	if err != nil {
		return unverifiable("querying Prometheus: " + err.Error())
	}
	if len(warnings) > 0 {
		return unverifiable("Prometheus answered with warnings (the data may be partial): " + strings.Join(warnings, "; "))
	}
	x, err := oneSample(val)
	if err != nil {
		return unverifiable(err.Error())
	}
	v := strconv.FormatFloat(x, 'g', -1, 64)
	want := fmt.Sprintf("%s %s %s", v, c.Op, strconv.FormatFloat(c.Threshold, 'g', -1, 64))
	if Compare(x, c.Op, c.Threshold) {
		return passed(v, want)
	}
	return failed(v, "not "+want)
}

// oneSample reads the value of a scalar or a one-element vector.
func oneSample(val model.Value) (float64, error) {
	var x float64
	switch t := val.(type) {
	case *model.Scalar:
		x = float64(t.Value)
	case model.Vector:
		if len(t) != 1 {
			return 0, fmt.Errorf("the query returned %d samples, want exactly one (aggregate it, e.g. sum(...))", len(t))
		}
		x = float64(t[0].Value)
	case nil:
		return 0, errors.New("the query returned no value")
	default:
		return 0, fmt.Errorf("the query returned a %s, want a scalar or a vector of one sample", val.Type())
	}
	if math.IsNaN(x) {
		return 0, errors.New("the query returned NaN (no data in the window, or 0/0)")
	}
	return x, nil
}

func validOp(op v1alpha1.Comparison) bool {
	switch op {
	case v1alpha1.ComparisonLess, v1alpha1.ComparisonLessEqual, v1alpha1.ComparisonGreater, v1alpha1.ComparisonGreaterEqual,
		v1alpha1.ComparisonEqual, v1alpha1.ComparisonNotEqual:
		return true
	}
	return false
}

// Compare reports whether "x op threshold" holds (false for an unknown op).
func Compare(x float64, op v1alpha1.Comparison, threshold float64) bool {
	switch op {
	case v1alpha1.ComparisonLess:
		return x < threshold
	case v1alpha1.ComparisonLessEqual:
		return x <= threshold
	case v1alpha1.ComparisonGreater:
		return x > threshold
	case v1alpha1.ComparisonGreaterEqual:
		return x >= threshold
	case v1alpha1.ComparisonEqual:
		return x == threshold
	case v1alpha1.ComparisonNotEqual:
		return x != threshold
	}
	return false
}
