package chartsource_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/chartfixture"
)

// padIndex is index with YAML comment lines appended up to size bytes.
func padIndex(index []byte, size int) []byte {
	line := []byte("# " + string(bytes.Repeat([]byte("p"), 125)) + "\n")
	out := append([]byte{}, index...)
	if out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	for len(out) < size {
		out = append(out, line...)
	}
	return out
}

// TestIndexParsedInProcessOnlyUpToCap: an index.yaml within the wire limit
// but above the in-process cap is not parsed in the parent (it is the
// render child's job, Options.LookupIndex): refused, naming the cap.
func TestIndexParsedInProcessOnlyUpToCap(t *testing.T) {
	t.Parallel()
	repo := chartfixture.StartRepo(t)
	pkg := chartTgz(t, "web", "1.2.3", "x")
	repo.Set("/stable/index.yaml", padIndex(chartfixture.IndexFor(t, pkg), chartsource.MaxInProcessIndexSize+1))
	repo.Set("/stable/charts/web-1.2.3.tgz", pkg)
	_, err := fetcher(t.TempDir()).Fetch(context.Background(), chartsource.Entry{Repo: repo.URL(), Name: "web", Version: "1.2.3", Digest: sha(pkg)})
	if !errors.Is(err, chartsource.ErrIndexTooLarge) {
		t.Fatalf("want ErrIndexTooLarge, got exit %d: %v", exitcode.Code(err), err)
	}
	wantRefusal(t, err, chartsource.RuleChartTooLarge, fmt.Sprint(chartsource.MaxInProcessIndexSize))

	// Just under the cap: parsed.
	repo.Set("/stable/index.yaml", padIndex(chartfixture.IndexFor(t, pkg), chartsource.MaxInProcessIndexSize-200))
	if _, err := fetcher(t.TempDir()).Fetch(context.Background(), chartsource.Entry{Repo: repo.URL(), Name: "web", Version: "1.2.3", Digest: sha(pkg)}); err != nil {
		t.Fatal(err)
	}
}

// TestLookupIndexSeam: the index is handed to Options.LookupIndex as a
// file holding exactly what was served, removed after the lookup; the
// entry it returns is the one used.
func TestLookupIndexSeam(t *testing.T) {
	t.Parallel()
	repo := chartfixture.StartRepo(t)
	pkg := chartTgz(t, "web", "1.2.3", "x")
	index := padIndex(chartfixture.IndexFor(t, pkg), 3*chartsource.MaxInProcessIndexSize)
	repo.Set("/stable/index.yaml", index)
	repo.Set("/stable/charts/web-1.2.3.tgz", pkg)
	dir := t.TempDir()
	var seen string
	lookup := func(_ context.Context, file, name, version string) (chartsource.IndexEntry, error) { //nolint:unparam // Options.LookupIndex's signature
		seen = file
		got, err := os.ReadFile(file)
		if err != nil || !bytes.Equal(got, index) {
			t.Errorf("the index file does not hold what was served (%v)", err)
		}
		if name != "web" || version != "1.2.3" {
			t.Errorf("asked %s %s", name, version)
		}
		return chartsource.IndexEntry{Name: name, Version: version, URLs: []string{"charts/web-1.2.3.tgz"}, Digest: sha(pkg)}, nil
	}
	got, err := fetcher(t.TempDir(), func(o *chartsource.Options) { o.LookupIndex = lookup; o.IndexDir = dir }).
		Fetch(context.Background(), chartsource.Entry{Repo: repo.URL(), Name: "web", Version: "1.2.3", Digest: sha(pkg)})
	if err != nil || !bytes.Equal(got, pkg) {
		t.Fatalf("Fetch: %v", err)
	}
	if filepath.Dir(seen) != dir {
		t.Errorf("index stored in %s, want in %s", seen, dir)
	}
	if _, err := os.Stat(seen); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the index file was left behind: %v", err)
	}
}

func TestLookupIndexFile(t *testing.T) {
	t.Parallel()
	pkg := chartTgz(t, "web", "1.2.3", "x")
	good := chartfixture.IndexFor(t, pkg)
	for _, tt := range []struct {
		name    string
		data    []byte
		version string
		want    error
		code    int
	}{
		{name: "found", data: good, version: "1.2.3"},
		{name: "JSON", data: []byte(`{"apiVersion":"v1","entries":{"web":[{"name":"web","version":"1.2.3","digest":"00"}]}}`), version: "1.2.3"},
		{name: "other version", data: good, version: "1.2.4", want: chartsource.ErrNotInIndex, code: exitcode.Invalid},
		{name: "not YAML", data: []byte("a: [\n"), version: "1.2.3", code: exitcode.Invalid},
		{name: "no apiVersion", data: []byte("entries: {}\n"), version: "1.2.3", code: exitcode.Invalid},
		{name: "above the in-process cap", data: padIndex(good, chartsource.MaxInProcessIndexSize+1), version: "1.2.3",
			want: chartsource.ErrIndexTooLarge, code: exitcode.Refused},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "index.yaml")
			if err := os.WriteFile(file, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			e, err := chartsource.LookupIndexFile(context.Background(), file, "web", tt.version)
			if tt.code == 0 {
				if err != nil || e.Version != "1.2.3" || e.Name != "web" {
					t.Fatalf("%+v, %v", e, err)
				}
				return
			}
			if exitcode.Code(err) != tt.code || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("want exit %d (%v), got exit %d: %v", tt.code, tt.want, exitcode.Code(err), err)
			}
		})
	}
}
