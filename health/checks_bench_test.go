package health_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/health"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/runtimecheck"
)

// benchApps x 2 status codes = 100 series of checkout_requests_total.
const benchApps = 50

// dayOfSamples writes an OpenMetrics file: 100 counters sampled every 15 s
// over the 24 h before end (5,760 samples each), 1% of requests failing.
func dayOfSamples(b *testing.B, end time.Time) string {
	path := filepath.Join(b.TempDir(), "day.om")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintln(w, "# TYPE checkout_requests counter")
	start := end.Add(-24 * time.Hour).Unix()
	for a := range benchApps {
		for _, code := range []string{"200", "500"} {
			rate := 100.0
			if code == "500" {
				rate = 1
			}
			for ts := start; ts <= end.Unix(); ts += 15 {
				fmt.Fprintf(w, "checkout_requests_total{app=\"app-%02d\",code=\"%s\"} %g %d\n", a, code, rate*float64(ts-start), ts)
			}
		}
	}
	fmt.Fprintln(w, "# EOF")
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// benchChecks are five checks of app: error ratio (5m, 1h), request rate,
// errors over the day, the day's peak rate (a subquery over 24 h).
func benchChecks(app string) map[string]any {
	sel := fmt.Sprintf(`app=%q`, app)
	q := []struct{ name, query, op string }{
		{"error-ratio-5m", `sum(rate(checkout_requests_total{` + sel + `,code="500"}[5m])) / sum(rate(checkout_requests_total{` + sel + `}[5m]))`, "<"},
		{"error-ratio-1h", `sum(increase(checkout_requests_total{` + sel + `,code="500"}[1h])) / sum(increase(checkout_requests_total{` + sel + `}[1h]))`, "<"},
		{"request-rate", `sum(rate(checkout_requests_total{` + sel + `}[5m]))`, ">"},
		{"errors-1d", `sum(increase(checkout_requests_total{` + sel + `,code="500"}[1d]))`, ">"},
		{"peak-rate-1d", `max_over_time(sum(rate(checkout_requests_total{` + sel + `}[5m]))[1d:5m])`, ">"},
	}
	checks := make([]any, 0, len(q))
	for _, c := range q {
		checks = append(checks, map[string]any{"name": c.name, "interval": "1s",
			"prometheus": map[string]any{"query": c.query, "op": c.op, "threshold": 0.05}})
	}
	return map[string]any{"soak": "1h", "checks": checks}
}

func cpuSelf() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countingEvaluator counts the evaluations of the wrapped evaluator.
type countingEvaluator struct {
	ev health.CheckEvaluator
	n  atomic.Int64
}

func (c *countingEvaluator) Evaluate(ctx context.Context, o runtimecheck.Owner, rc v1alpha1.RuntimeCheck) runtimecheck.Result {
	r := c.ev.Evaluate(ctx, o, rc)
	if r.Verdict != v1alpha1.CheckPassed {
		panic(fmt.Sprintf("check %s of %s: %s %s", rc.Name, o.Name, r.Verdict, r.Message))
	}
	c.n.Add(1)
	return r
}

// BenchmarkCheckRound is one evaluation round of the runtime checks: 100
// Acceptances (images verified: no workloads) with 5 Prometheus checks each
// (interval 1 s, soak 1 h, so every round evaluates all 500), run by the
// verifier of `throughline serve` (health.NewManager: informer cache, 4
// workers, status written to a real kube-apiserver) against a real
// Prometheus holding a day of samples for 100 series (backfilled with
// promtool). One op is one round (500 evaluations); it reports the CPU of
// the verifier (this process) and of Prometheus per round.
func BenchmarkCheckRound(b *testing.B) {
	end := time.Now().Add(-time.Minute).Truncate(time.Second)
	prom := testenv.StartPrometheusTSDB(b, testenv.Backfill(b, dayOfSamples(b, end)))
	p, err := runtimecheck.NewPrometheus(runtimecheck.PrometheusConfig{URL: prom.URL})
	if err != nil {
		b.Fatal(err)
	}
	api := testenv.StartAPIServer(b, testenv.APIServerOptions{CRDPaths: []string{filepath.Join(testenv.RepoRoot(b), "deploy", "crds", "throughline.dev_acceptances.yaml")}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 10 {
		if err := api.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%02d", i)}}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 100 {
		acc := health.NewAcceptance()
		acc.SetNamespace(fmt.Sprintf("ns-%02d", i%10))
		acc.SetName(fmt.Sprintf("app-%02d", i))
		acc.Object["spec"] = map[string]any{"app": acc.GetName(), "renderedHash": "sha256:" + fmt.Sprintf("%064d", i), "objectCount": int64(1),
			"workloads": []any{}, "checks": benchChecks(fmt.Sprintf("app-%02d", i%benchApps))}
		if err := api.Client.Create(ctx, acc); err != nil {
			b.Fatal(err)
		}
	}
	mgr, r, err := health.NewManager(ctx, api.Config, health.ManagerOptions{MetricsAddr: "0", ProbeAddr: "0", Prometheus: p, Workers: 4})
	if err != nil {
		b.Fatal(err)
	}
	counter := &countingEvaluator{ev: r.Checks}
	r.Checks = counter
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	waitEvals := func(n int64) {
		for counter.n.Load() < n {
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitEvals(500) // the first round: informers synced, statuses created
	promCPU0, err := prom.CPU(ctx)
	if err != nil {
		b.Fatal(err)
	}
	self0, evals0 := cpuSelf(), counter.n.Load()
	b.ResetTimer()
	rounds := 0
	for b.Loop() {
		rounds++
		waitEvals(evals0 + int64(500*rounds))
	}
	b.StopTimer()
	evals := counter.n.Load() - evals0
	self := cpuSelf() - self0
	promCPU1, err := prom.CPU(ctx)
	if err != nil {
		b.Fatal(err)
	}
	perRound := float64(evals) / 500
	b.ReportMetric(float64(self.Milliseconds())/perRound, "verifier-cpu-ms/round")
	b.ReportMetric(float64((promCPU1-promCPU0).Milliseconds())/perRound, "prometheus-cpu-ms/round")
}
