package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// RegistryOptions configures [StartRegistry].
type RegistryOptions struct {
	// Username and Password, when both set, turn on htpasswd basic auth
	// (bcrypt, written with the htpasswd program of apache2-utils).
	Username, Password string
}

// Registry is a real OCI registry (CNCF distribution, Debian's docker-registry).
type Registry struct {
	// Host is host:port of the registry on 127.0.0.1, for image references
	// such as Host + "/demo/app:v1" (plain HTTP).
	Host string
	// Username and Password are the credentials when auth is on.
	Username, Password string
	// RootDir is the filesystem storage of the registry.
	RootDir string
}

// StartRegistry starts docker-registry on a free 127.0.0.1 port with a config
// written here (filesystem storage in t.TempDir, delete enabled, htpasswd auth
// when opts has credentials) and stops it when the test ends.
func StartRegistry(t testing.TB, opts RegistryOptions) *Registry {
	t.Helper()
	bin, ok := binary(EnvRegistryBin, "docker-registry")
	if !ok {
		missing(t, "docker-registry not found ("+EnvRegistryBin+" or PATH)", "hack/registry.sh")
	}
	dir := t.TempDir()
	r := &Registry{RootDir: filepath.Join(dir, "storage"), Username: opts.Username, Password: opts.Password}
	auth := ""
	if opts.Username != "" || opts.Password != "" {
		if opts.Username == "" || opts.Password == "" {
			t.Fatalf("registry auth needs both a username and a password")
		}
		htpasswd, ok := binary(EnvHtpasswdBin, "htpasswd")
		if !ok {
			missing(t, "htpasswd not found ("+EnvHtpasswdBin+" or PATH)", "hack/registry.sh")
		}
		file := filepath.Join(dir, "htpasswd")
		if err := writeHtpasswd(t.Context(), htpasswd, file, opts.Username, opts.Password); err != nil {
			t.Fatal(err)
		}
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: throughline-test\n    path: %s\n", file)
	}
	config := filepath.Join(dir, "config.yml")
	// REGISTRY_* variables would override the config: drop them.
	env := environ(nil, "REGISTRY_")
	ctx, cancel := startContext(t)
	defer cancel()
	ports, err := startServer(ctx, t, "docker-registry", bin, env, 1,
		func(ports []int) []string {
			cfg := fmt.Sprintf(`version: 0.1
log:
  level: info
  fields:
    service: registry
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: 127.0.0.1:%d
  headers:
    X-Content-Type-Options: [nosniff]
%s`, r.RootDir, ports[0], auth)
			if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
				t.Fatalf("write registry config %s: %v", config, err)
			}
			return []string{"serve", config}
		},
		func(ctx context.Context, ports []int) error {
			// /v2/ answers 200 without auth and 401 with it.
			return expectStatus("http://127.0.0.1:"+strconv.Itoa(ports[0])+"/v2/", http.StatusOK, http.StatusUnauthorized)(ctx)
		})
	if err != nil {
		t.Fatalf("start docker-registry: %v", err)
	}
	r.Host = "127.0.0.1:" + strconv.Itoa(ports[0])
	t.Logf("docker-registry at http://%s (auth: %t)", r.Host, auth != "")
	return r
}

// writeHtpasswd writes a bcrypt htpasswd file with one user.
func writeHtpasswd(ctx context.Context, htpasswd, file, user, password string) error {
	out, err := exec.CommandContext(ctx, htpasswd, "-Bbn", user, password).Output()
	if err != nil {
		return fmt.Errorf("htpasswd for registry user %s: %w", user, err)
	}
	if err := os.WriteFile(file, out, 0o600); err != nil {
		return fmt.Errorf("write htpasswd file %s: %w", file, err)
	}
	return nil
}
