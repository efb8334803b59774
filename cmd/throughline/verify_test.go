package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
)

func TestVerifyUsage(t *testing.T) {
	for _, args := range [][]string{
		{"verify"},
		{"verify", "--namespace", "shop"},
		{"verify", "-n", "shop", "--acceptance", "web", "-o", "yaml"},
		{"verify", "-n", "shop", "--acceptance", "web", "extra"},
		{"serve", "--workers", "0"},
	} {
		if r := runCLI(t, args...); r.code != exitcode.Usage {
			t.Errorf("%v: exit %d, want %d (stderr %s)", args, r.code, exitcode.Usage, r.stderr)
		}
	}
}

func TestVerifyNoCluster(t *testing.T) {
	// A kubeconfig that points nowhere: an I/O failure, not a verdict.
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	verifyMust(t, os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	r := runCLI(t, "verify", "--kubeconfig", kc, "-n", "shop", "--acceptance", "web", "--no-registry-cache")
	if r.code != exitcode.Internal || !strings.Contains(r.stderr, "shop/web") {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
}

func verifyMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
