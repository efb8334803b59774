package serve

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/client-go/rest"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/gittest"
)

func TestNotifierFlags(t *testing.T) {
	ctx := context.Background()
	cfg := &rest.Config{Host: "http://127.0.0.1:1"}
	log := zerolog.Nop()
	off := notifierFlags{}
	stop, err := off.start(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if _, err := (&notifierFlags{addr: "127.0.0.1:0"}).start(ctx, cfg, log); err == nil || !strings.Contains(err.Error(), "--notifier-repo") {
		t.Fatalf("no repo: %v", err)
	}
	// A clone with an origin, a key in a file, a free port.
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "--bare", "-b", "main", "origin.git"}, {"clone", "-q", "origin.git", "work"}} {
		gittest.Run(t, dir, args...)
	}
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte("k3y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (&notifierFlags{addr: "127.0.0.1:0", repoDir: filepath.Join(dir, "work")}).start(ctx, cfg, log); err == nil || !strings.Contains(err.Error(), "both receivers would be off") {
		t.Fatalf("no secret: %v", err)
	}
	// Keyless signing of the verification summaries: both flags or
	// neither; not beside a key file that exists (one whose file is
	// absent, the Secret's optional key, is off).
	absent := filepath.Join(dir, "absent-summary-key")
	for _, tc := range []struct {
		name string
		n    notifierFlags
		want string
	}{
		{"a signing config without a token", notifierFlags{summarySigningConfig: key}, "go together"},
		{"a token without a signing config", notifierFlags{summaryToken: key}, "go together"},
		{"a key and keyless", notifierFlags{summaryKey: key, summarySigningConfig: key, summaryToken: key}, "not both"},
		// past the flags: the notifier reads the signing config (here not one)
		{"keyless beside an absent key", notifierFlags{summaryKey: absent, summarySigningConfig: key, summaryToken: key}, "signing config"},
	} {
		f := tc.n
		f.addr, f.repoDir, f.fluxKeyFile = "127.0.0.1:0", filepath.Join(dir, "work"), key
		_, err := f.start(ctx, cfg, log)
		if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.want == "signing config" && strings.Contains(err.Error(), "not both")) {
			t.Fatalf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
		if tc.want != "signing config" && exitcode.Code(err) != exitcode.Usage {
			t.Fatalf("%s: exit %d, want usage: %v", tc.name, exitcode.Code(err), err)
		}
	}
	neg := &notifierFlags{addr: "127.0.0.1:0", repoDir: filepath.Join(dir, "work"), fluxKeyFile: key, resync: -time.Second}
	if _, err := neg.start(ctx, cfg, log); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "--notifier-resync-interval") {
		t.Fatalf("negative resync interval: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	n := &notifierFlags{addr: addr, repoDir: filepath.Join(dir, "work"), branch: "main", fluxKeyFile: key, rate: -1}
	stop, err = n.start(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if n.svc == nil || n.svc.Resyncer() != nil {
		t.Fatalf("--notifier-resync-interval 0: service %v, want one without a resync", n.svc)
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "ok\n" {
		t.Fatalf("/healthz %d %q", resp.StatusCode, b)
	}
	resp, err = http.Post("http://"+addr+"/v1/flux", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unsigned: %d", resp.StatusCode)
	}
	resp, err = http.Post("http://"+addr+"/v1/argocd", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("argocd without a token must not be served: %d", resp.StatusCode)
	}
}
