package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/internal/testenv"
)

// TestServeDeliveryMetrics: throughline serve, started here against a real
// kube-apiserver with the notifier's in-process clone of a real Git server
// (the release image's configuration), exposes the delivery metrics on its
// /metrics, labelled by the registry's apps and environments only, and
// reads them again when the records branch moves (a promotion pushed by
// someone else).
func TestServeDeliveryMetrics(t *testing.T) {
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{
		CRDPaths: []string{filepath.Join(repoRoot, "deploy", "crds", "throughline.dev_acceptances.yaml")},
	})
	kc, err := api.Kubeconfig("serve", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := chainfixture.New(t, exampleRepo)
	gs := testenv.StartGitServer(t, testenv.GitServerOptions{})
	remote, err := gs.CreateRepo(ctx, "org/gitops.git")
	if err != nil {
		t.Fatal(err)
	}
	env, dir := testenv.GitEnv(t.TempDir()), t.TempDir()
	// The story without its last promotion (search in staging) and pause.
	testenv.Git(t, ctx, env, f.Dir, "push", "-q", remote, "HEAD~4:refs/heads/main")
	token := filepath.Join(dir, "argocd-token")
	if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	metrics := freeAddr(t)
	var logs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--kubeconfig", kc, "--metrics-bind-address", metrics, "--health-probe-bind-address", freeAddr(t),
			"--notifier-bind-address", "127.0.0.1:0", "--notifier-repo", filepath.Join(dir, "clone"), "--notifier-git-url", remote,
			"--notifier-argocd-token-file", token, "--notifier-resync-interval", "0", "--breakglass-expiry=false",
			"--delivery-metrics-interval", "100ms", "--log-format", "json"}, &logs, &logs)
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	}()
	scrape := func(want ...string) string {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			page := get(t, "http://"+metrics+"/metrics")
			missing := ""
			for _, w := range want {
				if !strings.Contains(page, w) {
					missing = w
				}
			}
			if missing == "" {
				return page
			}
			select {
			case code := <-done:
				t.Fatalf("serve exited %d:\n%s", code, logs.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("/metrics never said %s:\n%s\nlogs:\n%s", missing, grep(page, "throughline_delivery"), logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	page := scrape(`throughline_delivery_decisions_total{app="cart",environment="production",outcome="accepted"} 3`,
		`throughline_delivery_attempts_total{app="cart",environment="production"} 3`,
		`throughline_delivery_open_attempts{app="web",environment="staging"} 0`,
		`throughline_delivery_halts_total{app="web",class="live",environment="production"} 1`,
		`throughline_delivery_promotions_total{app="cart",environment="production"} 2`,
		`throughline_delivery_observed_to_accepted_seconds_bucket{app="checkout",environment="staging",le="60"} 1`,
		`throughline_delivery_merged_to_observed_seconds_count{app="web",environment="production"} 1`,
		`throughline_delivery_opened_to_approved_seconds_sum{app="checkout",environment="production"} 2400`,
		`throughline_delivery_invalid_files 0`)
	if strings.Contains(page, `app="search"`) || strings.Contains(page, `app="_other"`) {
		t.Fatalf("search is not promoted yet, and every pair is the registry's:\n%s", grep(page, "throughline_delivery"))
	}
	// Someone else pushes search's promotion: the branch moved.
	testenv.Git(t, ctx, env, f.Dir, "push", "-q", remote, "HEAD:refs/heads/main")
	scrape(`throughline_delivery_decisions_total{app="search",environment="staging",outcome="accepted"} 1`,
		`throughline_delivery_decisions_total{app="cart",environment="production",outcome="accepted"} 3`)
}

// freeAddr is a 127.0.0.1 address nothing listens on (now).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// grep is the lines of s that contain sub.
func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// syncBuffer is a bytes.Buffer safe for serve's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
