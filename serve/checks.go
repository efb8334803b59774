package serve

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/throughline-dev/throughline/boundedfile"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/runtimecheck"
)

// maxCAFile caps the --prometheus-ca-file bundle.
const maxCAFile = 1 << 20

// checkFlags configure the runtime checks' Prometheus: its URL, the Secret
// holding its credentials (read through the API, never printed) and a CA.
type checkFlags struct {
	url, secret, caFile string
	prom                *runtimecheck.Prometheus
}

func (c *checkFlags) add(f *pflag.FlagSet) {
	f.StringVar(&c.url, "prometheus-url", "", "Prometheus HTTP API the runtime checks query (without it a Prometheus check is Unverifiable)")
	f.StringVar(&c.secret, "prometheus-secret", "", "namespace/name of the Secret with the Prometheus credentials: "+
		"key token (bearer), or keys username and password (basic)")
	f.StringVar(&c.caFile, "prometheus-ca-file", "", "PEM certificates trusted for --prometheus-url besides the system's")
}

// load builds the Prometheus client (none without --prometheus-url).
func (c *checkFlags) load(ctx context.Context, cfg *rest.Config) error {
	if c.url == "" {
		if c.secret != "" || c.caFile != "" {
			return exitcode.Usagef("--prometheus-secret and --prometheus-ca-file need --prometheus-url")
		}
		return nil
	}
	pc := runtimecheck.PrometheusConfig{URL: c.url}
	if c.caFile != "" {
		b, err := boundedfile.Read(c.caFile, maxCAFile)
		if err != nil {
			return exitcode.Usagef("--prometheus-ca-file: %w", err)
		}
		pc.CA = b
	}
	if c.secret != "" {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return fmt.Errorf("kubernetes client for %s: %w", cfg.Host, err)
		}
		if err := prometheusCredentials(ctx, cs, c.secret, &pc); err != nil {
			return err
		}
	}
	p, err := runtimecheck.NewPrometheus(pc)
	if err != nil {
		return exitcode.Usagef("--prometheus-url: %w", err)
	}
	c.prom = p
	return nil
}

// prometheusCredentials reads the Secret ref (namespace/name): key token, or
// keys username and password. Errors name the Secret and its keys, never a
// value.
func prometheusCredentials(ctx context.Context, cs kubernetes.Interface, ref string, pc *runtimecheck.PrometheusConfig) error {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return exitcode.Usagef("--prometheus-secret %q: want namespace/name", ref)
	}
	s, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the Prometheus credentials (Secret %s): %w", ref, err)
	}
	token, user, pass := strings.TrimSpace(string(s.Data["token"])), string(s.Data["username"]), string(s.Data["password"])
	switch {
	case token != "" && (user != "" || pass != ""):
		return exitcode.Usagef("Secret %s: key token, or keys username and password, not both", ref)
	case token != "":
		pc.Token = token
	case user != "" && pass != "":
		pc.Username, pc.Password = user, pass
	default:
		return exitcode.Usagef("Secret %s: no key token, nor both keys username and password", ref)
	}
	return nil
}
