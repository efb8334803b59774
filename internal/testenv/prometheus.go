package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// EnvPrometheus names a prometheus binary to use instead of the one on PATH
// (Debian's package: apt-get install prometheus).
const EnvPrometheus = "THROUGHLINE_PROMETHEUS"

// PrometheusServer is a real Prometheus started by [StartPrometheus].
type PrometheusServer struct {
	// URL is the base URL of its HTTP API (http://127.0.0.1:<port>).
	URL string

	p *process
}

// RequirePrometheus returns the prometheus binary ($THROUGHLINE_PROMETHEUS,
// else prometheus on PATH), skipping the test without it (failing it when
// CI=true).
func RequirePrometheus(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv(EnvPrometheus); bin != "" && isExecutable(bin) {
		return bin
	}
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if InCI() {
			t.Fatalf("CI=true and no prometheus binary on PATH; install it with: apt-get install -y prometheus")
		}
		t.Skip("no prometheus binary on PATH; install it with: apt-get install -y prometheus (Debian's package)")
	}
	return bin
}

// StartPrometheus starts Prometheus on 127.0.0.1 scraping the targets
// (host:port, path /metrics) every second, its configuration and TSDB in a
// temporary directory, and waits until it is ready (/-/ready). It is stopped
// when the test ends (or by Stop).
func StartPrometheus(t testing.TB, scrapeTargets ...string) *PrometheusServer {
	t.Helper()
	return StartPrometheusTSDB(t, "", scrapeTargets...)
}

// Backfill turns an OpenMetrics file into TSDB blocks with promtool (the
// same Debian package: `promtool tsdb create-blocks-from openmetrics`) and
// returns their directory, for [StartPrometheusTSDB].
func Backfill(t testing.TB, openMetrics string) string {
	t.Helper()
	bin := RequirePrometheus(t)
	dir := t.TempDir()
	promtool := filepath.Join(filepath.Dir(bin), "promtool")
	out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", openMetrics, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, out)
	}
	return dir
}

// StartPrometheusTSDB is [StartPrometheus] on an existing TSDB directory
// (blocks from [Backfill]); "" is a fresh one.
func StartPrometheusTSDB(t testing.TB, tsdb string, scrapeTargets ...string) *PrometheusServer {
	t.Helper()
	bin := RequirePrometheus(t)
	dir := t.TempDir()
	quoted := make([]string, len(scrapeTargets))
	for i, s := range scrapeTargets {
		quoted[i] = strconv.Quote(s)
	}
	cfg := "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: test\n    static_configs:\n      - targets: [" +
		strings.Join(quoted, ", ") + "]\n"
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		url := "http://127.0.0.1:" + strconv.Itoa(port)
		data := tsdb
		if data == "" {
			data = filepath.Join(dir, fmt.Sprintf("data-%d", attempt))
		}
		p, err := startProcess(t, "prometheus", bin, []string{
			"--config.file=" + cfgPath, "--storage.tsdb.path=" + data, "--storage.tsdb.retention.time=30d",
			"--web.listen-address=127.0.0.1:" + strconv.Itoa(port), "--log.level=warn",
		}, environ(nil))
		if err != nil {
			t.Fatal(err)
		}
		err = p.waitReady(ctx, func(ctx context.Context) error {
			if p.addrInUse() {
				return errPortTaken
			}
			return httpOK(ctx, url+"/-/ready")
		})
		if err == nil {
			return &PrometheusServer{URL: url, p: p}
		}
		p.stop()
		if !errors.Is(err, errPortTaken) || attempt == 3 {
			t.Fatalf("prometheus: %v", err)
		}
	}
}

// Stop stops Prometheus (a test of an unreachable Prometheus).
func (s *PrometheusServer) Stop() { s.p.stop() }

// CPU is the CPU time Prometheus has used (its process_cpu_seconds_total).
func (s *PrometheusServer) CPU(ctx context.Context) (time.Duration, error) {
	v, err := metric(ctx, "prometheus", s.URL+"/metrics", "process_cpu_seconds_total")
	return time.Duration(v * float64(time.Second)), err
}

func httpOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// Exporter is a metrics endpoint the test controls: the gauges and counters
// it registers are served on Target/metrics for Prometheus to scrape.
type Exporter struct {
	// Target is host:port, what StartPrometheus scrapes.
	Target   string
	Registry *prometheus.Registry
}

// StartExporter serves a fresh registry on 127.0.0.1 until the test ends.
func StartExporter(t testing.TB) *Exporter {
	t.Helper()
	reg := prometheus.NewRegistry()
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &Exporter{Target: strings.TrimPrefix(srv.URL, "http://"), Registry: reg}
}

// Gauge registers a gauge with the labels and returns it.
func (e *Exporter) Gauge(t testing.TB, name string, labels prometheus.Labels) prometheus.Gauge {
	t.Helper()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: name, ConstLabels: labels})
	if err := e.Registry.Register(g); err != nil {
		t.Fatalf("exporter gauge %s: %v", name, err)
	}
	return g
}

// Counter registers a counter with the labels and returns it.
func (e *Exporter) Counter(t testing.TB, name string, labels prometheus.Labels) prometheus.Counter {
	t.Helper()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: name, ConstLabels: labels})
	if err := e.Registry.Register(c); err != nil {
		t.Fatalf("exporter counter %s: %v", name, err)
	}
	return c
}
