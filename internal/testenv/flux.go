package testenv

import (
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// NotificationController is Flux's notification-controller running against an
// [APIServer].
type NotificationController struct {
	// EventsURL is the event endpoint (http://127.0.0.1:port/) that Flux
	// controllers post events to (their --events-addr).
	EventsURL string
	// ReceiverURL is the webhook receiver endpoint (Receiver objects).
	ReceiverURL string
}

// RequireNotificationController skips the test (fails it when CI=true) unless
// the notification-controller binary and CRDs are built, and returns their
// directory. Call it first to skip before any other setup.
func RequireNotificationController(t testing.TB) string {
	t.Helper()
	return notificationControllerDir(t)
}

// StartNotificationController installs the notification-controller CRDs
// (Provider, Alert, Receiver) into api, starts the controller binary against it
// with every listener on 127.0.0.1 and waits until it reports ready; it stops
// when the test ends. The controller watches all namespaces.
func StartNotificationController(t testing.TB, api *APIServer) *NotificationController {
	t.Helper()
	dir := RequireNotificationController(t)
	ctx, cancel := startContext(t)
	defer cancel()
	if err := api.InstallCRDs(ctx, filepath.Join(dir, "crds")); err != nil {
		t.Fatalf("notification-controller: %v", err)
	}
	kubeconfig, err := api.Kubeconfig("notification-controller", "")
	if err != nil {
		t.Fatalf("notification-controller: %v", err)
	}
	t0 := time.Now()
	// Ports: events, receiver, metrics, health.
	ports, err := startServer(ctx, t, "notification-controller", filepath.Join(dir, "notification-controller"),
		environ([]string{"KUBECONFIG=" + kubeconfig}, "KUBECONFIG"), 4,
		func(p []int) []string {
			return []string{
				"--events-addr=127.0.0.1:" + strconv.Itoa(p[0]),
				"--receiverAddr=127.0.0.1:" + strconv.Itoa(p[1]),
				"--metrics-addr=127.0.0.1:" + strconv.Itoa(p[2]),
				"--health-addr=127.0.0.1:" + strconv.Itoa(p[3]),
				"--enable-leader-election=false",
				"--log-level=debug",
			}
		},
		func(ctx context.Context, p []int) error {
			return expectStatus("http://127.0.0.1:"+strconv.Itoa(p[3])+"/readyz", http.StatusOK)(ctx)
		})
	if err != nil {
		t.Fatalf("start notification-controller: %v", err)
	}
	nc := &NotificationController{
		EventsURL:   "http://127.0.0.1:" + strconv.Itoa(ports[0]) + "/",
		ReceiverURL: "http://127.0.0.1:" + strconv.Itoa(ports[1]) + "/",
	}
	t.Logf("notification-controller ready in %s, events at %s", time.Since(t0).Round(time.Millisecond), nc.EventsURL)
	return nc
}
