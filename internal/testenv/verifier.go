package testenv

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/throughline-dev/throughline/health"
	"github.com/throughline-dev/throughline/registry"
)

// StartVerifier runs throughline's Acceptance verifier (the controller
// manager of `throughline serve`, health.NewManager) against the API server
// of cfg until ctx ends or the test does, with short retry timings and a
// registry client of its own (a private cache; the registries the test
// names are real). A manager that stops with an error fails the test.
func StartVerifier(ctx context.Context, t testing.TB, cfg *rest.Config) {
	t.Helper()
	reg, err := registry.New(registry.Options{CacheDir: t.TempDir(), Timeout: 5 * time.Second, Attempts: 1})
	if err != nil {
		t.Fatalf("verifier registry client: %v", err)
	}
	mgr, _, err := health.NewManager(ctx, cfg, health.ManagerOptions{
		MetricsAddr: "0", ProbeAddr: "0", Registry: reg,
		PendingWait: time.Second, MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second,
	})
	if err != nil {
		t.Fatalf("verifier: %v", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("verifier: %v", err)
		}
	})
}
