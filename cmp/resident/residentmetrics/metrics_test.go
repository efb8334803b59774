package residentmetrics_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/cmp/resident"
	"github.com/throughline-dev/throughline/cmp/resident/residentmetrics"
	"github.com/throughline-dev/throughline/render"
)

func TestObserve(t *testing.T) {
	m := residentmetrics.New(func() (int, int64) { return 3, 4096 })
	m.Observe(&resident.Response{CacheHit: true}, 2*time.Millisecond)
	m.Observe(&resident.Response{}, 2*time.Second)
	m.Observe(&resident.Response{Code: 4, BudgetKill: "time"}, 3*time.Second)
	m.ObserveChild(render.ChildExit{PeakRSS: 100 << 20})
	m.ObserveChild(render.ChildExit{}) // a platform without ru_maxrss: not observed
	l := resident.NewRenderLimit(3)
	if err := l.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.WatchRenders(l)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`throughline_cmp_generate_duration_seconds_count{result="hit"} 1`,
		`throughline_cmp_generate_duration_seconds_count{result="render"} 1`,
		`throughline_cmp_generate_duration_seconds_count{result="error"} 1`,
		"throughline_cmp_cache_hits_total 1",
		"throughline_cmp_cache_misses_total 2",
		`throughline_cmp_render_budget_kills_total{budget="time"} 1`,
		`throughline_cmp_render_budget_kills_total{budget="memory"} 0`,
		"throughline_cmp_memory_cache_entries 3",
		"throughline_cmp_memory_cache_bytes 4096",
		"throughline_cmp_render_child_peak_memory_bytes_count 1",
		`throughline_cmp_render_child_peak_memory_bytes_bucket{le="1.34217728e+08"} 1`,
		`throughline_cmp_render_child_peak_memory_bytes_bucket{le="6.7108864e+07"} 0`,
		"throughline_cmp_renders_in_flight 1",
		"throughline_cmp_renders_waiting 0",
		"throughline_cmp_render_slots 3",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
