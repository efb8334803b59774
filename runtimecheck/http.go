package runtimecheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// MaxBody is how much of a probe's response body is read and matched.
const MaxBody = 64 << 10

// maxEndpoints bounds the endpoints probed per evaluation.
const maxEndpoints = 8

// Prober probes in-cluster Services: it resolves the Service's ready
// endpoints through the API (the Service's port, then the EndpointSlices'
// port of the same name) and sends each a GET, following no redirect.
type Prober struct {
	// Client reads Services and EndpointSlices.
	Client client.Reader
	// Transport sends the requests (nil: a transport without proxy).
	Transport http.RoundTripper
}

// RuleCheckNamespace is the rule id of an HTTP check whose Service is in a
// namespace the check may not probe (checkfile refuses it in the file with
// the same id).
const RuleCheckNamespace = "check-namespace"

// Probe evaluates an HTTP check of the Acceptance o: every ready endpoint
// (at most 8) must answer the expected status, within the timeout, with a
// body (its first 64 KiB) that matches. The Service must be in o's
// namespace or one of o.ProbeNamespaces; any other is Unverifiable and
// nothing is probed. Nothing of the answer but its status code reaches the
// Result: no body byte, no length, no header, no transport error text.
func (p *Prober) Probe(ctx context.Context, o Owner, c *v1alpha1.HTTPCheck, timeout time.Duration) Result {
	ns := o.Namespace
	if c.Service.Namespace != "" {
		ns = c.Service.Namespace
	}
	if ns != o.Namespace && !slices.Contains(o.ProbeNamespaces, ns) {
		return unverifiable(fmt.Sprintf("%s: Service %s/%s is not in the Acceptance's namespace %q nor in a namespace the committed "+
			"environment registry binds to its app: nothing probed", RuleCheckNamespace, ns, c.Service.Name, o.Namespace))
	}
	var re *regexp.Regexp
	if c.BodyMatch != "" {
		var err error
		if re, err = regexp.Compile(c.BodyMatch); err != nil {
			return unverifiable(fmt.Sprintf("bodyMatch %q: %v", c.BodyMatch, err))
		}
	}
	if !strings.HasPrefix(c.Path, "/") {
		return unverifiable(fmt.Sprintf("path %q does not start with /", c.Path))
	}
	svc := "Service " + ns + "/" + c.Service.Name
	addrs, res := p.endpoints(ctx, ns, c.Service)
	if res != nil {
		return *res
	}
	want := int(c.ExpectStatus)
	if want == 0 {
		want = http.StatusOK
	}
	hc := &http.Client{
		Transport:     p.transport(),
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	var worst time.Duration
	var last string
	for _, a := range addrs {
		value, took, msg := probeOne(ctx, hc, a, c.Path, want, re, timeout)
		if msg != "" {
			return failed(value, fmt.Sprintf("%s endpoint %s: %s", svc, a, msg))
		}
		if took >= worst {
			worst, last = took, value
		}
	}
	return passed(last, fmt.Sprintf("%s: %d ready endpoints answered %d", svc, len(addrs), want))
}

func (p *Prober) transport() http.RoundTripper {
	if p.Transport != nil {
		return p.Transport
	}
	return &http.Transport{DisableKeepAlives: true, Proxy: nil, MaxResponseHeaderBytes: 64 << 10}
}

// probeOne GETs one endpoint; msg is empty when it passed. value and msg
// carry the status code and the time taken, never the answer's bytes:
// Go's transport quotes a malformed status or header line in its error,
// so a failed exchange is named by its kind only.
func probeOne(
	ctx context.Context, hc *http.Client, addr, path string, want int, re *regexp.Regexp, timeout time.Duration,
) (value string, took time.Duration, msg string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return "", 0, "the request cannot be built"
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return "no answer", time.Since(start), exchangeFailure(err, timeout)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
	_ = resp.Body.Close()
	took = time.Since(start)
	value = fmt.Sprintf("%d in %s", resp.StatusCode, took.Round(time.Millisecond))
	switch {
	case err != nil:
		return value, took, "the body could not be read to its end"
	case resp.StatusCode != want:
		return value, took, fmt.Sprintf("status %d, want %d", resp.StatusCode, want)
	case took > timeout:
		return value, took, fmt.Sprintf("answered in %s, over %s", took.Round(time.Millisecond), timeout)
	case re != nil && !re.Match(body):
		return value, took, "the body does not match bodyMatch"
	}
	return value, took, ""
}

// exchangeFailure names why a request got no usable answer without quoting
// the error (which may hold bytes of the answer).
func exchangeFailure(err error, timeout time.Duration) string {
	var ne net.Error
	var op *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return fmt.Sprintf("no answer within %s", timeout)
	case errors.Is(err, context.Canceled):
		return "the probe was cancelled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &op) && op.Op == "dial":
		return "the endpoint cannot be reached"
	}
	return "no valid HTTP answer"
}

// endpoints lists host:port of the Service port's ready endpoints; a
// non-nil Result ends the evaluation.
func (p *Prober) endpoints(ctx context.Context, ns string, ref v1alpha1.ServiceReference) ([]string, *Result) {
	svc := "Service " + ns + "/" + ref.Name
	var s corev1.Service
	if err := p.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			r := failed("", svc+" not found")
			return nil, &r
		}
		r := unverifiable(fmt.Sprintf("reading %s: %v", svc, err))
		return nil, &r
	}
	var port *corev1.ServicePort
	for i := range s.Spec.Ports {
		if s.Spec.Ports[i].Port == ref.Port {
			port = &s.Spec.Ports[i]
		}
	}
	if port == nil {
		r := failed("", fmt.Sprintf("%s has no port %d", svc, ref.Port))
		return nil, &r
	}
	var slices discoveryv1.EndpointSliceList
	if err := p.Client.List(ctx, &slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: ref.Name}); err != nil {
		r := unverifiable(fmt.Sprintf("listing the EndpointSlices of %s: %v", svc, err))
		return nil, &r
	}
	seen := map[string]bool{}
	var addrs []string
	for _, sl := range slices.Items {
		if sl.AddressType != discoveryv1.AddressTypeIPv4 && sl.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		target := int32(0)
		for _, sp := range sl.Ports {
			if sp.Port != nil && ptrString(sp.Name) == port.Name {
				target = *sp.Port
			}
		}
		if target == 0 {
			continue
		}
		for _, ep := range sl.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, ip := range ep.Addresses {
				a := net.JoinHostPort(ip, strconv.Itoa(int(target)))
				if !seen[a] {
					seen[a] = true
					addrs = append(addrs, a)
				}
			}
		}
	}
	if len(addrs) == 0 {
		r := failed("no ready endpoint", fmt.Sprintf("%s port %d has no ready endpoint", svc, ref.Port))
		return nil, &r
	}
	sort.Strings(addrs)
	if len(addrs) > maxEndpoints {
		addrs = addrs[:maxEndpoints]
	}
	return addrs, nil
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
