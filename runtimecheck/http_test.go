package runtimecheck

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// service is a Service "web" with port 80 named http, whose EndpointSlice
// points at the servers' addresses (ready unless listed in notReady).
func service(t *testing.T, urls []string, notReady ...string) []client.Object {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "metrics", Port: 9090}, {Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
	}}
	var objs []client.Object
	objs = append(objs, svc)
	for i, u := range urls {
		host, port, err := net.SplitHostPort(strings.TrimPrefix(u, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		ready := true
		for _, n := range notReady {
			ready = ready && n != u
		}
		objs = append(objs, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "shop", Name: "web-" + strconv.Itoa(i), Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("metrics"), Port: ptr.To(int32(1))}, {Name: ptr.To("http"), Port: ptr.To(int32(p))}},
		})
	}
	return objs
}

func server(t *testing.T, h http.HandlerFunc) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestHTTPProbe attacks the probe: a wrong status, a redirect (never
// followed), a body that matches only beyond 64 KiB, a slow answer, one bad
// endpoint among good ones, a Service without ready endpoints.
func TestHTTPProbe(t *testing.T) {
	ok := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	broken := server(t, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "db down", http.StatusServiceUnavailable) })
	redirect := server(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, ok+"/healthz", http.StatusFound) })
	late := server(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", MaxBody) + `"status":"ok"`))
	})
	slow := server(t, func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(500 * time.Millisecond)
		_, _ = w.Write([]byte(`"status":"ok"`))
	})
	check := &v1alpha1.HTTPCheck{Service: v1alpha1.ServiceReference{Name: "web", Port: 80}, Path: "/healthz", BodyMatch: `"status":\s*"ok"`}
	tests := []struct {
		name     string
		urls     []string
		notReady []string
		check    *v1alpha1.HTTPCheck
		verdict  v1alpha1.CheckVerdict
		msg      string
	}{
		{"passes", []string{ok}, nil, check, v1alpha1.CheckPassed, "1 ready endpoints answered 200"},
		{"503", []string{broken}, nil, check, v1alpha1.CheckFailed, "status 503, want 200"},
		{"one bad endpoint among good ones", []string{ok, broken}, nil, check, v1alpha1.CheckFailed, "status 503"},
		{"a not-ready bad endpoint is not probed", []string{ok, broken}, []string{broken}, check, v1alpha1.CheckPassed, ""},
		{"redirect not followed", []string{redirect}, nil, check, v1alpha1.CheckFailed, "status 302"},
		{"match beyond 64 KiB", []string{late}, nil, check, v1alpha1.CheckFailed, "does not match"},
		{"slow", []string{slow}, nil, check, v1alpha1.CheckFailed, "no answer within 200ms"},
		{"no ready endpoint", []string{ok}, []string{ok}, check, v1alpha1.CheckFailed, "no ready endpoint"},
		{"no such Service", []string{ok}, nil, &v1alpha1.HTTPCheck{Service: v1alpha1.ServiceReference{Name: "api", Port: 80}, Path: "/"},
			v1alpha1.CheckFailed, "Service shop/api not found"},
		{"no such port", []string{ok}, nil, &v1alpha1.HTTPCheck{Service: v1alpha1.ServiceReference{Name: "web", Port: 8080}, Path: "/"},
			v1alpha1.CheckFailed, "no port 8080"},
		{"expected status", []string{broken}, nil, &v1alpha1.HTTPCheck{Service: check.Service, Path: "/", ExpectStatus: 503},
			v1alpha1.CheckPassed, "answered 503"},
		{"invalid bodyMatch", []string{ok}, nil, &v1alpha1.HTTPCheck{Service: check.Service, Path: "/", BodyMatch: "("},
			v1alpha1.CheckUnverifiable, "bodyMatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Prober{Client: fakeClient(t, service(t, tt.urls, tt.notReady...)...)}
			r := p.Probe(context.Background(), Owner{Namespace: "shop"}, tt.check, 200*time.Millisecond)
			if r.Verdict != tt.verdict || !strings.Contains(r.Message, tt.msg) {
				t.Fatalf("got %s %q %q; want %s containing %q", r.Verdict, r.Value, r.Message, tt.verdict, tt.msg)
			}
		})
	}
}

// rawServer answers every connection with resp, whatever the request.
func rawServer(t *testing.T, resp string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				buf := make([]byte, 4096)
				_, _ = c.Read(buf)
				_, _ = c.Write([]byte(resp))
			}()
		}
	}()
	return "http://" + l.Addr().String()
}

// TestHTTPProbeNeverEchoesTheResponse attacks the probe as an oracle: a
// Service whose answer holds a secret (in the body, a malformed status
// line, a malformed header) must not see a byte of it, nor the body's
// length, in the verdict, value or message, whether bodyMatch matches,
// captures or fails.
func TestHTTPProbeNeverEchoesTheResponse(t *testing.T) {
	t.Parallel()
	const secret = "SECRET-7f3a9c41e2"
	body := server(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"token":"` + secret + `"}`))
	})
	status := rawServer(t, secret+" 200 OK\r\n\r\n")
	header := rawServer(t, "HTTP/1.1 200 OK\r\n"+secret+"\r\n\r\n")
	badHeader := rawServer(t, "HTTP/1.1 200 OK\r\nX-Token: "+secret+"\x00\r\nContent-Length: 2\r\n\r\nok")
	proto := rawServer(t, "HTTP/9.9 "+secret+"\r\n\r\n")
	code := rawServer(t, "HTTP/1.1 2"+secret+" OK\r\n\r\n")
	short := rawServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"+secret)
	svc := v1alpha1.ServiceReference{Name: "web", Port: 80}
	for _, tt := range []struct {
		name, url, match string
	}{
		{"body does not match", body, `^nothing$`},
		{"body matches with a capture", body, `"token":"(SECRET-[0-9a-f]+)"`},
		{"body matches a prefix of the secret", body, `SECRET-7f3a`},
		{"malformed status line", status, ""},
		{"malformed header line", header, ""},
		{"header with a NUL", badHeader, ""},
		{"unknown protocol", proto, ""},
		{"bad status code", code, ""},
		{"body shorter than its length", short, `SECRET`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &Prober{Client: fakeClient(t, service(t, []string{tt.url})...)}
			r := p.Probe(context.Background(), Owner{Namespace: "shop"}, &v1alpha1.HTTPCheck{Service: svc, Path: "/", BodyMatch: tt.match}, time.Second)
			for _, field := range []string{string(r.Verdict), r.Value, r.Message} {
				for _, leak := range []string{secret, strconv.Itoa(len(`{"token":"`+secret+`"}`)) + " bytes"} {
					if strings.Contains(field, leak) {
						t.Fatalf("%q leaks %q of the response (verdict %s, value %q, message %q)", field, leak, r.Verdict, r.Value, r.Message)
					}
				}
			}
		})
	}
}

// TestHTTPProbeStaysInItsScope attacks the run-time namespace rule: a
// check naming another namespace probes nothing unless the verifier bound
// that namespace to the Acceptance (from the committed registry).
func TestHTTPProbeStaysInItsScope(t *testing.T) {
	t.Parallel()
	hit := false
	url := server(t, func(w http.ResponseWriter, _ *http.Request) { hit = true })
	objs := service(t, []string{url})
	for _, o := range objs {
		o.SetNamespace("kube-system")
	}
	for _, tt := range []struct {
		name  string
		owner Owner
		ok    bool
	}{
		{"another namespace, no binding", Owner{Namespace: "shop"}, false},
		{"another namespace, bound to another", Owner{Namespace: "shop", ProbeNamespaces: []string{"payments-staging"}}, false},
		{"the namespace the verifier bound", Owner{Namespace: "shop", ProbeNamespaces: []string{"kube-system"}}, true},
		{"its own namespace", Owner{Namespace: "kube-system"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hit = false
			p := &Prober{Client: fakeClient(t, objs...)}
			c := &v1alpha1.HTTPCheck{Service: v1alpha1.ServiceReference{Namespace: "kube-system", Name: "web", Port: 80}, Path: "/"}
			r := p.Probe(context.Background(), tt.owner, c, time.Second)
			if tt.ok != (r.Verdict == v1alpha1.CheckPassed) || tt.ok != hit {
				t.Fatalf("verdict %s %q, probed %v; want allowed=%v", r.Verdict, r.Message, hit, tt.ok)
			}
			if !tt.ok && (r.Verdict != v1alpha1.CheckUnverifiable || !strings.Contains(r.Message, RuleCheckNamespace)) {
				t.Fatalf("verdict %s %q; want Unverifiable naming rule %s", r.Verdict, r.Message, RuleCheckNamespace)
			}
		})
	}
}
