package render_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/render"
)

// chartsUsed builds the app at rel of root and lists its charts.
func chartsUsed(t *testing.T, root, rel string, helm render.HelmOptions) []render.UsedChart {
	t.Helper()
	ctx := context.Background()
	app, err := render.Open(ctx, render.Options{Root: root, Path: rel, Helm: helm})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Build(ctx); err != nil {
		t.Fatal(err)
	}
	cs, err := app.ChartsUsed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func sha(data []byte) string {
	s := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(s[:])
}

// TestChartsUsed: a chart app's chart and a kustomization's chart are
// recorded with name, version, source directory, the digest of their
// files and their values schema's digest and $id; a change to any file of
// the chart directory (a vendored subchart's too) changes the digest.
func TestChartsUsed(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	copyTree(t, "testdata/helm/repo", root)
	schema, err := os.ReadFile(filepath.Join(root, "apps/shop/values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	helm := render.HelmOptions{ValueFiles: []string{"values-staging.yaml"}}
	cs := chartsUsed(t, root, "apps/shop", helm)
	if len(cs) != 1 || cs[0].Name != "shop" || cs[0].Version != "0.1.0" || cs[0].Source != "apps/shop" || cs[0].Remote ||
		cs[0].SchemaDigest != sha(schema) || cs[0].SchemaID != "https://example.test/shop/values/v1" || !strings.HasPrefix(cs[0].Digest, "sha256:") {
		t.Fatalf("chart app: %+v", cs)
	}
	digest := cs[0].Digest
	if again := chartsUsed(t, root, "apps/shop", helm); again[0].Digest != digest {
		t.Fatalf("the digest of an unchanged chart changed: %s, then %s", digest, again[0].Digest)
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	values, _ := os.ReadFile(filepath.Join(root, "apps/shop/values-staging.yaml"))
	write("apps/shop/values-staging.yaml", string(values)+"\n# a comment\n")
	// A value file inside the chart directory is a file of the chart (Helm
	// packages it): part of the digest.
	if again := chartsUsed(t, root, "apps/shop", helm); again[0].Digest == digest {
		t.Fatal("a changed file of the chart directory left the chart's digest unchanged")
	}
	digest = chartsUsed(t, root, "apps/shop", helm)[0].Digest
	sub, _ := os.ReadFile(filepath.Join(root, "apps/shop/charts/cache/values.yaml"))
	write("apps/shop/charts/cache/values.yaml", string(sub)+"\n# changed\n")
	if again := chartsUsed(t, root, "apps/shop", helm); again[0].Digest == digest {
		t.Fatal("a changed vendored subchart left the chart's digest unchanged")
	}

	ks := chartsUsed(t, root, "apps/web/overlays/staging", render.HelmOptions{})
	if len(ks) != 1 || ks[0].Name != "webapp" || ks[0].Version != "1.2.3" || !strings.HasSuffix(ks[0].Source, "/webapp") || ks[0].Remote {
		t.Fatalf("helmCharts overlay: %+v", ks)
	}
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// tgz packs files (archive path -> body) in the given order.
func tgz(t testing.TB, files ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestPackageFile: the values schema is the chart's own (not a subchart's),
// a path escaping the archive is refused, a file over the cap is refused.
func TestPackageFile(t *testing.T) {
	t.Parallel()
	pkg := tgz(t, [2]string{"web/charts/sub/values.schema.json", "{}"}, [2]string{"web/values.schema.json", `{"$id":"x","version":3}`})
	got, err := render.PackageFile(pkg, render.ValuesSchemaFile, 1<<20)
	if err != nil || string(got) != `{"$id":"x","version":3}` {
		t.Fatalf("schema %q, %v", got, err)
	}
	if _, id, v := render.SchemaIdentity(got); id != "x" || v != "3" {
		t.Fatalf("identity %q %q", id, v)
	}
	if got, err := render.PackageFile(tgz(t, [2]string{"web/Chart.yaml", "name: web"}), render.ValuesSchemaFile, 1<<20); err != nil || got != nil {
		t.Fatalf("a chart without a schema: %q, %v", got, err)
	}
	if _, err := render.PackageFile(tgz(t, [2]string{"../values.schema.json", "{}"}), render.ValuesSchemaFile, 1<<20); err == nil ||
		!strings.Contains(err.Error(), "escapes the archive") {
		t.Fatalf("a path escaping the archive: %v", err)
	}
	if _, err := render.PackageFile(pkg, render.ValuesSchemaFile, 4); err == nil {
		t.Fatal("a schema over the cap was read")
	}
	if _, err := render.PackageFile([]byte("not gzip"), render.ValuesSchemaFile, 1<<20); err == nil {
		t.Fatal("a package that is not gzip was read")
	}
}

// FuzzPackageFile: a chart package comes from a chart repository. Whatever
// it holds, PackageFile returns at most maxFile bytes or an error, never
// panics; SchemaIdentity of anything returns a sha256 digest.
func FuzzPackageFile(f *testing.F) {
	f.Add(tgz(f, [2]string{"web/values.schema.json", `{"$id":"a"}`}))
	f.Add(tgz(f, [2]string{"web/../../values.schema.json", `{}`}))
	f.Add([]byte{0x1f, 0x8b, 0x08})
	f.Add([]byte(`{"$id": 3, "version": {"x": 1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := render.PackageFile(data, render.ValuesSchemaFile, 64)
		if err == nil && len(got) > 64 {
			t.Fatalf("%d bytes over the 64 byte cap", len(got))
		}
		if d, _, _ := render.SchemaIdentity(data); !strings.HasPrefix(d, "sha256:") || len(d) != 71 {
			t.Fatalf("digest %q", d)
		}
	})
}
