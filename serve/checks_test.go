package serve

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/runtimecheck"
)

// TestServePrometheusCredentials reads the Prometheus credentials from a
// Secret: a token, or a username and password; every refusal names the
// Secret and never prints a value.
func TestServePrometheusCredentials(t *testing.T) {
	secret := func(name string, data map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: name}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	cs := k8sfake.NewClientset(
		secret("token", map[string]string{"token": "t0ken-value\n"}),
		secret("basic", map[string]string{"username": "reader", "password": "pa55-value"}),
		secret("both", map[string]string{"token": "t0ken-value", "password": "pa55-value"}),
		secret("half", map[string]string{"username": "reader"}),
	)
	tests := []struct {
		ref       string
		want      runtimecheck.PrometheusConfig
		code      int
		errSubstr string
	}{
		{"monitoring/token", runtimecheck.PrometheusConfig{Token: "t0ken-value"}, 0, ""},
		{"monitoring/basic", runtimecheck.PrometheusConfig{Username: "reader", Password: "pa55-value"}, 0, ""},
		{"monitoring/both", runtimecheck.PrometheusConfig{}, exitcode.Usage, "not both"},
		{"monitoring/half", runtimecheck.PrometheusConfig{}, exitcode.Usage, "no key token"},
		{"monitoring/absent", runtimecheck.PrometheusConfig{}, exitcode.Internal, "Secret monitoring/absent"},
		{"token", runtimecheck.PrometheusConfig{}, exitcode.Usage, "want namespace/name"},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			var pc runtimecheck.PrometheusConfig
			err := prometheusCredentials(context.Background(), cs, tt.ref, &pc)
			if tt.code == 0 {
				if err != nil || pc.Token != tt.want.Token || pc.Username != tt.want.Username || pc.Password != tt.want.Password {
					t.Fatalf("got %+v, %v", pc, err)
				}
				return
			}
			if err == nil || exitcode.Code(err) != tt.code || !strings.Contains(err.Error(), tt.errSubstr) {
				t.Fatalf("error %v (exit %d); want exit %d containing %q", err, exitcode.Code(err), tt.code, tt.errSubstr)
			}
			if strings.Contains(err.Error(), "value") {
				t.Fatalf("the error prints a secret value: %v", err)
			}
		})
	}
}

func TestServePrometheusFlags(t *testing.T) {
	for _, c := range []checkFlags{{secret: "monitoring/token"}, {caFile: "/ca.pem"}, {url: "ftp://prom"}, {url: "https://u:pw@prom"}} {
		err := c.load(context.Background(), &rest.Config{Host: "https://127.0.0.1:1"})
		if exitcode.Code(err) != exitcode.Usage || strings.Contains(err.Error(), ":pw@") {
			t.Fatalf("%+v: %v (exit %d), want a usage error", c, err, exitcode.Code(err))
		}
	}
	c := checkFlags{}
	if err := c.load(context.Background(), &rest.Config{}); err != nil || c.prom != nil {
		t.Fatalf("no --prometheus-url: %v %v", c.prom, err)
	}
}
