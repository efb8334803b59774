package notifier

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/forge"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/golden"
)

func TestStartServesAndStops(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := t.TempDir()
	gittest.Run(t, base, "init", "-q", "--bare", "-b", "main", "origin.git")
	gittest.Run(t, base, "clone", "-q", "origin.git", "work")
	repo, err := gitops.OpenLocal(ctx, filepath.Join(base, "work"))
	must(t, err)

	if _, err := Start(ctx, ServiceConfig{Addr: "127.0.0.1:0", Kube: &rest.Config{}}); err == nil {
		t.Fatal("Start without a repository succeeded")
	}
	for _, tc := range []struct {
		name, branch, want string
	}{
		{"default branch", "", "main"},
		{"given branch", "records", "records"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, err := Start(ctx, ServiceConfig{
				Handler: Config{FluxKey: fluxKey, Rate: -1}, Addr: "127.0.0.1:0", Repo: repo, Branch: tc.branch,
				Kube: &rest.Config{Host: "http://127.0.0.1:1"},
			})
			must(t, err)
			if svc.Branch() != tc.want {
				t.Errorf("branch %q, want %q", svc.Branch(), tc.want)
			}
			url := "http://" + svc.Addr().String()
			if code, body := get(t, url+"/healthz"); code != http.StatusOK || body != "ok\n" {
				t.Errorf("/healthz %d %q", code, body)
			}
			for path, want := range map[string]int{"/v1/flux": http.StatusUnauthorized, "/v1/argocd": http.StatusNotFound} {
				resp, err := http.Post(url+path, "application/json", strings.NewReader("{}"))
				must(t, err)
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("%s: %d, want %d", path, resp.StatusCode, want)
				}
			}
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			must(t, svc.Stop(sctx))
			if _, err := http.Get(url + "/healthz"); err == nil {
				t.Error("still serving after Stop")
			}
		})
	}
	// A taken port fails Start.
	svc, err := Start(ctx, ServiceConfig{Handler: Config{FluxKey: fluxKey}, Addr: "127.0.0.1:0", Repo: repo, Kube: &rest.Config{}})
	must(t, err)
	defer func() { _ = svc.Stop(ctx) }()
	_, err = Start(ctx, ServiceConfig{Handler: Config{FluxKey: fluxKey}, Addr: svc.Addr().String(), Repo: repo, Kube: &rest.Config{}})
	// The listener's own error, kept in the chain; the wording ("listening
	// on <addr>") in the golden file.
	if opErr := (*net.OpError)(nil); !errors.As(err, &opErr) || opErr.Op != "listen" {
		t.Fatalf("taken port: %v, want the listener's error", err)
	}
	golden.ErrorLines(t, "testdata/start-taken-port.golden", 1, svc.Addr().String(), "<addr>")("taken port", err)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, string(b)
}

// blockingForge holds every commit status until released.
type blockingForge struct {
	release chan struct{}
	fail    error
	mu      sync.Mutex
	set     []forge.CommitStatus
}

func (f *blockingForge) SetCommitStatus(_ context.Context, st forge.CommitStatus) error {
	<-f.release
	f.mu.Lock()
	defer f.mu.Unlock()
	f.set = append(f.set, st)
	return f.fail
}

func TestStatusPosterBoundsAndCounts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		fail       error
		ok, failed float64
	}{
		{"posted", nil, DefaultStatusesInFlight, 1},
		{"forge refuses", &forge.APIError{Status: http.StatusUnprocessableEntity}, 0, DefaultStatusesInFlight + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fg := &blockingForge{release: make(chan struct{}), fail: tc.fail}
			m, err := NewMetrics(prometheus.NewRegistry())
			must(t, err)
			var mu sync.Mutex
			var dropped, errs int
			p := newStatusPoster(context.Background(), ServiceConfig{Forge: fg, OnStatusError: func(_ *evidence.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if errors.Is(err, ErrStatusDropped) {
					dropped++
				} else {
					errs++
				}
			}}, m)
			ev := &evidence.Record{App: "checkout", Environment: "production", DesiredRevision: srcRev, PromotionID: "p1"}
			for range DefaultStatusesInFlight + 1 {
				p.post(ev)
			}
			close(fg.release)
			deadline := time.Now().Add(10 * time.Second)
			for testutilCount(m.Statuses.WithLabelValues("ok"))+testutilCount(m.Statuses.WithLabelValues("failed")) <
				DefaultStatusesInFlight+1 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if ok, failed := testutilCount(m.Statuses.WithLabelValues("ok")), testutilCount(m.Statuses.WithLabelValues("failed")); ok != tc.ok ||
				failed != tc.failed {
				t.Errorf("ok %v failed %v, want %v %v", ok, failed, tc.ok, tc.failed)
			}
			mu.Lock()
			defer mu.Unlock()
			if dropped != 1 {
				t.Errorf("dropped %d, want 1", dropped)
			}
			if want := int(tc.failed) - 1; errs != want {
				t.Errorf("errors %d, want %d", errs, want)
			}
			fg.mu.Lock()
			defer fg.mu.Unlock()
			if len(fg.set) != DefaultStatusesInFlight || fg.set[0].Context != "throughline/production/checkout" {
				t.Errorf("statuses set: %d %+v", len(fg.set), fg.set)
			}
		})
	}
}
