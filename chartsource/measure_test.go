package chartsource_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/internal/chartfixture"
)

// peakHeap runs f and returns the peak heap in use above what it was
// before (sampled every millisecond) and the bytes f allocated.
func peakHeap(f func()) (peak, total uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, alloc0 := ms.HeapAlloc, ms.TotalAlloc
	var highest atomic.Uint64
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-t.C:
				runtime.ReadMemStats(&m)
				if m.HeapAlloc > highest.Load() {
					highest.Store(m.HeapAlloc)
				}
			}
		}
	}()
	f()
	close(done)
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc > highest.Load() {
		highest.Store(ms.HeapAlloc)
	}
	if highest.Load() > base {
		peak = highest.Load() - base
	}
	return peak, ms.TotalAlloc - alloc0
}

// bigIndex is an index.yaml of about size bytes: versions of web, the
// last one pkg's.
func bigIndex(t *testing.T, pkg []byte, size int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n  web:\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "  - name: web\n    version: 0.%d.0\n    description: a chart version of a repository that publishes many\n"+
			"    urls:\n    - charts/web-0.%d.0.tgz\n    digest: \"%064x\"\n    created: \"2026-01-01T00:00:00Z\"\n", i, i, i)
	}
	b.WriteString(strings.TrimPrefix(string(chartfixture.IndexFor(t, pkg)), "apiVersion: v1\nentries:\n  web:\n"))
	return []byte(b.String())
}

// TestMeasureRemoteReads logs the peak heap of the two cases, a
// 95 MiB OCI manifest and a 60 MiB index.yaml, with the default options.
// THROUGHLINE_MEASURE=1 go test -run TestMeasureRemoteReads -v ./chartsource/
func TestMeasureRemoteReads(t *testing.T) {
	if os.Getenv("THROUGHLINE_MEASURE") == "" {
		t.Skip("set THROUGHLINE_MEASURE=1")
	}
	for _, w := range wires {
		host, digest, _ := inflatedRegistry(t, func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/manifests/") }, 95<<20, w.chunked)
		ref := chartsource.Ref{Repo: "oci://" + host + "/charts", Name: "podinfo", Version: "6.7.1"}
		var err error
		peak, total := peakHeap(func() {
			_, err = fetcher(t.TempDir()).Fetch(context.Background(), chartsource.Entry{Repo: ref.Repo, Name: ref.Name, Version: ref.Version, Digest: digest})
		})
		t.Logf("95 MiB manifest (%s): peak heap +%.1f MiB, allocated %.1f MiB: %v", w.name, mib(peak), mib(total), err)
	}
	repo := chartfixture.StartRepo(t)
	pkg := chartTgz(t, "web", "1.2.3", "x")
	repo.Set("/stable/index.yaml", bigIndex(t, pkg, 60<<20))
	repo.Set("/stable/charts/web-1.2.3.tgz", pkg)
	var err error
	peak, total := peakHeap(func() {
		_, err = fetcher(t.TempDir()).Fetch(context.Background(), chartsource.Entry{Repo: repo.URL(), Name: "web", Version: "1.2.3", Digest: sha(pkg)})
	})
	t.Logf("60 MiB index.yaml: peak heap +%.1f MiB, allocated %.1f MiB: %v", mib(peak), mib(total), err)
	repo.Set("/stable/index.yaml", bigIndex(t, pkg, 4<<20-4<<10))
	peak, total = peakHeap(func() {
		_, err = fetcher(t.TempDir()).Fetch(context.Background(), chartsource.Entry{Repo: repo.URL(), Name: "web", Version: "1.2.3", Digest: sha(pkg)})
	})
	t.Logf("4 MiB index.yaml (parsed in-process): peak heap +%.1f MiB, allocated %.1f MiB: %v", mib(peak), mib(total), err)
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }
