package chartsource_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

// repoWithLock is a repository root holding dir/throughline-charts.lock.yaml
// with the entries, and its confined filesystem.
func repoWithLock(t *testing.T, dir string, es ...chartsource.Entry) *render.ConfinedFS {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
		t.Fatal(err)
	}
	data, _, err := chartsource.UpdateLock(chartsource.LockPath(dir), nil, es)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, chartsource.LockPath(dir)), data, 0o644); err != nil {
		t.Fatal(err)
	}
	fsys, err := render.NewConfinedFS(root, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

// TestOCIChartPinnedByDigest: a chart pushed with Helm's SDK resolves to its
// manifest digest; the render gets the package by that digest; a warm fetch
// asks the registry nothing; a re-push under the same version moves the tag
// but not what renders, and pin and drift refuse it naming both digests.
func TestOCIChartPinnedByDigest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	host, hits := startRegistry(t)
	v1 := chartTgz(t, "podinfo", "6.7.1", "first")
	pushed := pushChart(t, host, "charts", v1)
	ref := chartsource.Ref{Repo: "oci://" + host + "/charts", Name: "podinfo", Version: "6.7.1"}
	cacheDir := t.TempDir()

	res, err := fetcher(cacheDir).Resolve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if res.Digest != pushed || res.Package != sha(v1) || res.Kind != chartsource.KindOCI {
		t.Fatalf("resolved %+v, want manifest %s package %s", res, pushed, sha(v1))
	}
	entry := chartsource.Entry{Repo: ref.Repo, Name: ref.Name, Version: ref.Version, Digest: res.Digest}
	fsys := repoWithLock(t, "apps/web", entry)

	// Cold (a fresh cache): the package, fetched by digest.
	src := chartsource.Source{FS: fsys, Fetcher: fetcher(t.TempDir())}
	got, err := src.Chart(ctx, "apps/web", ref)
	if err != nil || !bytes.Equal(got, v1) {
		t.Fatalf("Chart: %v (same bytes %v)", err, bytes.Equal(got, v1))
	}
	// Warm: the resolution filled cacheDir; no request at all.
	before := hits.Load()
	warm := chartsource.Source{FS: fsys, Fetcher: fetcher(cacheDir)}
	if got, err := warm.Chart(ctx, "apps/web", ref); err != nil || !bytes.Equal(got, v1) {
		t.Fatalf("warm Chart: %v", err)
	}
	if n := hits.Load() - before; n != 0 {
		t.Fatalf("warm fetch made %d requests, want 0", n)
	}

	// The attack: the same version re-pushed with other content.
	v1b := chartTgz(t, "podinfo", "6.7.1", "replaced")
	repushed := pushChart(t, host, "charts", v1b)
	if repushed == pushed {
		t.Fatal("the re-push did not change the digest")
	}
	// What renders is still the pinned package: fetched by digest, never by tag.
	if got, err := (chartsource.Source{FS: fsys, Fetcher: fetcher(t.TempDir())}).Chart(ctx, "apps/web", ref); err != nil || !bytes.Equal(got, v1) {
		t.Fatalf("after the re-push the render got another package: %v", err)
	}
	now, err := fetcher(t.TempDir()).Resolve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	lockData, err := os.ReadFile(filepath.Join(fsys.Root(), "apps/web", chartsource.LockFile))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = chartsource.UpdateLock("apps/web/"+chartsource.LockFile, lockData, []chartsource.Entry{{Repo: ref.Repo, Name: ref.Name,
		Version: ref.Version, Digest: now.Digest}})
	wantRefusal(t, err, chartsource.RuleChartVersionMoved, pushed, repushed)

	rec := chartsource.NewRecord(res, res2time())
	rep := chartsource.CheckDrift(ctx, []chartsource.SourcedRecord{{Record: rec, File: "staging.json"}}, fetcher(t.TempDir()))
	if len(rep.Drifts) != 1 || len(rep.Drifts[0].Digests) != 2 || rep.Drifts[0].Digests[0] != pushed || rep.Drifts[0].Digests[1] != repushed {
		t.Fatalf("drift check: %+v", rep)
	}
}

// TestOCIRefusals: what the lock pins must be a Helm chart, within the size
// cap, served by the registry it names.
func TestOCIRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	host, _ := startRegistry(t)
	chart := chartTgz(t, "podinfo", "1.0.0", "x")
	chartDigest := pushChart(t, host, "charts", chart)
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(host+"/charts/app:1.0.0", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	imgDigest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		entry    chartsource.Entry
		opts     func(*chartsource.Options)
		rule     string
		code     int
		contains string
	}{
		{name: "manifest is an image, not a chart", rule: chartsource.RuleChartNotChart, contains: "not a Helm chart",
			entry: chartsource.Entry{Repo: "oci://" + host + "/charts", Name: "app", Version: "1.0.0", Digest: imgDigest.String()}},
		{name: "chart bigger than the cap", rule: chartsource.RuleChartTooLarge, contains: "100 byte limit",
			entry: chartsource.Entry{Repo: "oci://" + host + "/charts", Name: "podinfo", Version: "1.0.0", Digest: chartDigest},
			opts:  func(o *chartsource.Options) { o.MaxChartSize = 100 }},
		{name: "digest the registry does not have", code: exitcode.Invalid, contains: "not found",
			entry: chartsource.Entry{Repo: "oci://" + host + "/charts", Name: "podinfo", Version: "1.0.0", Digest: sha([]byte("nothing"))}},
		{name: "digest of the wrong length", code: exitcode.Invalid, contains: "field digest",
			entry: chartsource.Entry{Repo: "oci://" + host + "/charts", Name: "podinfo", Version: "1.0.0", Digest: chartDigest[:40]}},
		{name: "offline cache miss", code: exitcode.Pending, contains: "not in the chart cache",
			entry: chartsource.Entry{Repo: "oci://" + host + "/charts", Name: "podinfo", Version: "1.0.0", Digest: chartDigest},
			opts:  func(o *chartsource.Options) { o.Offline = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fetcher(t.TempDir())
			if tc.opts != nil {
				f = fetcher(t.TempDir(), tc.opts)
			}
			_, err := f.Fetch(ctx, tc.entry)
			if tc.rule != "" {
				wantRefusal(t, err, tc.rule, tc.contains)
				return
			}
			if exitcode.Code(err) != tc.code || err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.contains)) {
				t.Fatalf("want exit %d naming %q, got exit %d: %v", tc.code, tc.contains, exitcode.Code(err), err)
			}
		})
	}
}

// TestOCICacheVerifiedOnRead: a cache entry whose bytes were swapped is a
// miss: the package is fetched again, never served wrong.
func TestOCICacheVerifiedOnRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	host, hits := startRegistry(t)
	chart := chartTgz(t, "podinfo", "1.0.0", "x")
	dig := pushChart(t, host, "charts", chart)
	dir := t.TempDir()
	e := chartsource.Entry{Repo: "oci://" + host + "/charts", Name: "podinfo", Version: "1.0.0", Digest: dig}
	if _, err := fetcher(dir).Fetch(ctx, e); err != nil {
		t.Fatal(err)
	}
	blob := filepath.Join(dir, "blobs", "sha256", sha(chart)[7:])
	if err := os.WriteFile(blob, chartTgz(t, "podinfo", "1.0.0", "evil"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := hits.Load()
	got, err := fetcher(dir).Fetch(ctx, e)
	if err != nil || !bytes.Equal(got, chart) {
		t.Fatalf("fetch after tampering: %v", err)
	}
	if hits.Load() == before {
		t.Fatal("a tampered cache entry was served without a fetch")
	}
}

func res2time() time.Time { return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) }
