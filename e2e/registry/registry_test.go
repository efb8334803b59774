//go:build e2e

package registry

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/registry"
)

// throughlineBin is the CLI built once for the package.
var throughlineBin string

func TestMain(m *testing.M) { testenv.MainWithThroughline(m, &throughlineBin) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type cliResult struct {
	code           int
	stdout, stderr string
}

func cli(t *testing.T, ctx context.Context, env []string, args ...string) cliResult {
	t.Helper()
	cmd := exec.CommandContext(ctx, throughlineBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running throughline %v: %v", args, err)
	}
	return cliResult{code, out.String(), errb.String()}
}

// TestTagDriftAgainstDistribution: against the real registry, with and
// without basic auth: resolve a multi-arch index, record the tag, push a new
// build under the same tag, record again; drift check refuses with both
// digests, and the registry now agrees with the second record only.
func TestTagDriftAgainstDistribution(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts testenv.RegistryOptions
	}{
		{"anonymous", testenv.RegistryOptions{}},
		{"basic-auth", testenv.RegistryOptions{Username: "ci", Password: "s3cr3t-pw"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := testenv.StartRegistry(t, tc.opts)
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			pushAuth := authn.Anonymous
			dockerConfig := t.TempDir()
			if tc.opts.Username != "" {
				pushAuth = &authn.Basic{Username: tc.opts.Username, Password: tc.opts.Password}
				cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg.Host,
					base64.StdEncoding.EncodeToString([]byte(tc.opts.Username+":"+tc.opts.Password)))
				must(t, os.WriteFile(filepath.Join(dockerConfig, "config.json"), []byte(cfg), 0o600))
			}
			env := []string{"DOCKER_CONFIG=" + dockerConfig, "THROUGHLINE_CACHE_DIR=" + t.TempDir()}
			opt := []remote.Option{remote.WithContext(ctx), remote.WithAuth(pushAuth)}
			ref := reg.Host + "/shop/checkout:1.4.2"

			// The registry package, credentials from the Docker config.
			t.Setenv("DOCKER_CONFIG", dockerConfig)
			c, err := registry.New(registry.Options{CacheDir: t.TempDir(), Timeout: 30 * time.Second})
			must(t, err)
			first := testenv.MultiArchIndex(t)
			first.Push(ctx, t, ref, opt...)
			d1, configs := first.Digest, first.Configs
			got, err := c.Resolve(ctx, ref)
			must(t, err)
			if got.Digest != d1 || !got.IsIndex() || len(got.Children) != 2 {
				t.Fatalf("Resolve = %+v, want index %s", got, d1)
			}
			arm, ok := got.ChildFor(registry.Platform{OS: "linux", Architecture: "arm64"})
			if !ok || arm.ConfigDigest != configs["linux/arm64/v8"] {
				t.Fatalf("linux/arm64 child = %+v, want config %s", arm, configs["linux/arm64/v8"])
			}
			if ok, err := c.Exists(ctx, got.Repository+"@"+arm.Digest); err != nil || !ok {
				t.Fatalf("Exists(child) = %v %v", ok, err)
			}
			if tc.opts.Username != "" {
				anon, err := registry.New(registry.Options{Auth: authn.Anonymous, Timeout: 30 * time.Second})
				must(t, err)
				if _, err := anon.ResolveDigest(ctx, ref); !errors.Is(err, registry.ErrUnauthorized) {
					t.Fatalf("anonymous against basic auth: %v, want ErrUnauthorized", err)
				}
				if r := cli(t, ctx, []string{"DOCKER_CONFIG=" + t.TempDir()}, "resolve", ref); r.code != 1 || !strings.Contains(r.stderr, "unauthorized") {
					t.Fatalf("resolve without credentials: exit %d %s", r.code, r.stderr)
				}
			}

			// The CLI: record, move the tag, record again, check.
			dir := t.TempDir()
			staging, production := filepath.Join(dir, "staging.json"), filepath.Join(dir, "production.yaml")
			if r := cli(t, ctx, env, "drift", "record", ref, "--out", staging); r.code != 0 || !strings.Contains(r.stdout, d1) {
				t.Fatalf("drift record: exit %d %s %s", r.code, r.stdout, r.stderr)
			}
			if r := cli(t, ctx, env, "drift", "check", staging); r.code != 0 {
				t.Fatalf("drift check before the move: exit %d %s", r.code, r.stderr)
			}
			second := testenv.MultiArchIndex(t)
			second.Push(ctx, t, ref, opt...) // the tag moves
			d2 := second.Digest
			if d2 == d1 {
				t.Fatal("the second push has the same digest")
			}
			if r := cli(t, ctx, env, "drift", "record", ref, "--out", production); r.code != 0 || !strings.Contains(r.stdout, d2) {
				t.Fatalf("drift record after the move: exit %d %s %s", r.code, r.stdout, r.stderr)
			}
			want := "REJECTED tag " + ref + " resolved to " + d1 + " and " + d2
			for _, args := range [][]string{
				{"drift", "check", staging, production},
				{"drift", "check", staging},
			} {
				r := cli(t, ctx, env, args...)
				if r.code != 3 || !strings.Contains(r.stderr, want) {
					t.Fatalf("%v: exit %d, want 3 and %q\n%s%s", args, r.code, want, r.stdout, r.stderr)
				}
			}
			if r := cli(t, ctx, env, "drift", "check", production); r.code != 0 {
				t.Fatalf("drift check of the current record: exit %d %s", r.code, r.stderr)
			}

			// resolve -o json through the real registry, and pin of a plain manifest.
			if r := cli(t, ctx, env, "resolve", "-o", "json", ref); r.code != 0 || !strings.Contains(r.stdout, d2) || !strings.Contains(r.stdout, `"variant": "v8"`) {
				t.Fatalf("resolve: exit %d %s %s", r.code, r.stdout, r.stderr)
			}
			app := filepath.Join(t.TempDir(), "app")
			must(t, os.MkdirAll(app, 0o755))
			manifest := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: checkout\nspec:\n  containers:\n    - name: app\n      image: " + ref + "  # pinned by throughline\n"
			must(t, os.WriteFile(filepath.Join(app, "pod.yaml"), []byte(manifest), 0o644))
			if r := cli(t, ctx, env, "pin", "--check", "--root", app, app); r.code != 3 {
				t.Fatalf("pin --check: exit %d %s", r.code, r.stderr)
			}
			if r := cli(t, ctx, env, "pin", "--root", app, app); r.code != 0 {
				t.Fatalf("pin: exit %d %s", r.code, r.stderr)
			}
			b, err := os.ReadFile(filepath.Join(app, "pod.yaml"))
			must(t, err)
			if want := strings.Replace(manifest, ref, ref+"@"+d2, 1); string(b) != want {
				t.Fatalf("pinned manifest:\n%s\nwant:\n%s", b, want)
			}

			// A deleted digest no longer exists; the verifier's check.
			dref, err := name.NewDigest(reg.Host+"/shop/checkout@"+d1, name.Insecure)
			must(t, err)
			must(t, remote.Delete(dref, opt...))
			if ok, err := c.Exists(ctx, dref.String()); err != nil || ok {
				t.Fatalf("Exists after delete = %v %v, want false", ok, err)
			}
		})
	}
}
