package registry

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// benchLatency is injected before every registry answer (an http.Handler
// wrapper around the in-process registry).
const benchLatency = 20 * time.Millisecond

type benchFixture struct {
	reg      *testRegistry
	tags     []string
	digests  []string
	inFlight atomic.Int64
	peak     atomic.Int64
}

// newBenchFixture pushes 200 images across 20 repositories.
func newBenchFixture(b *testing.B) *benchFixture {
	f := &benchFixture{}
	var latency atomic.Bool
	f.reg = newTestRegistry(b, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if latency.Load() {
				n := f.inFlight.Add(1)
				defer f.inFlight.Add(-1)
				for p := f.peak.Load(); n > p; p = f.peak.Load() {
					if f.peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(benchLatency)
			}
			h.ServeHTTP(w, r)
		})
	})
	for i := range 200 {
		ref := fmt.Sprintf("%s/team%02d/app:v%d", f.reg.Host, i%20, i/20)
		img := pushImage(b, ref)
		f.tags = append(f.tags, ref)
		f.digests = append(f.digests, fmt.Sprintf("%s/team%02d/app@%s", f.reg.Host, i%20, digestOf(b, img)))
	}
	latency.Store(true)
	return f
}

func (f *benchFixture) run(b *testing.B, refs []string, full bool, opts func() Options) {
	ctx := testContext(b, 5*time.Minute)
	var requests int64
	f.peak.Store(0)
	b.ResetTimer()
	for b.Loop() {
		c := newClient(b, opts()) // a new run: no tag is remembered
		before := f.reg.Requests()
		for i, r := range c.ResolveAll(ctx, refs, full) {
			if r.Err != nil {
				b.Fatalf("%s: %v", refs[i], r.Err)
			}
		}
		requests += f.reg.Requests() - before
	}
	b.ReportMetric(float64(requests)/float64(b.N)/float64(len(refs)), "requests/image")
	b.ReportMetric(float64(f.peak.Load()), "peak-in-flight")
}

// BenchmarkResolve200: 200 images across 20 repositories, 20 ms of latency
// on every registry answer, Concurrency 8.
//
//   - cold-tag-digest: tag -> digest (HEAD), a new Client each run.
//   - cold-tag-full: tag -> manifest and config digest (GET), empty cache.
//   - cached-digest: digest references whose manifests are in the disk
//     cache: no request at all.
func BenchmarkResolve200(b *testing.B) {
	f := newBenchFixture(b)
	base := func() Options {
		o := fastOptions()
		o.Concurrency = DefaultConcurrency
		return o
	}
	b.Run("cold-tag-digest", func(b *testing.B) { f.run(b, f.tags, false, base) })
	b.Run("cold-tag-full", func(b *testing.B) { f.run(b, f.tags, true, base) })
	dir := b.TempDir()
	warm := func() Options { o := base(); o.CacheDir = dir; return o }
	for i, r := range newClient(b, warm()).ResolveAll(testContext(b, time.Minute), f.digests, true) {
		if r.Err != nil {
			b.Fatalf("%s: %v", f.digests[i], r.Err)
		}
	}
	b.Run("cached-digest", func(b *testing.B) { f.run(b, f.digests, true, warm) })
}
