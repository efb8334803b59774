package notifier

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/promotion"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestLoad offers a fixed delivery rate on loopback for a fixed time with a
// share of duplicates (re-deliveries of events sent before), then checks
// that the Git commits are exactly the distinct events whose evidence was
// written, and reports the acknowledgement latencies. It never asserts a
// time. Run it on its own:
//
//	THROUGHLINE_NOTIFIER_LOAD=1 go test -count=1 -run TestLoad -v ./notifier/
//
// THROUGHLINE_NOTIFIER_LOAD_RATE (deliveries/s, 1000),
// THROUGHLINE_NOTIFIER_LOAD_SECONDS (30) and THROUGHLINE_NOTIFIER_LOAD_APPS
// (distinct events available, rate*seconds/2) size it.
func TestLoad(t *testing.T) {
	if os.Getenv("THROUGHLINE_NOTIFIER_LOAD") == "" {
		t.Skip("set THROUGHLINE_NOTIFIER_LOAD=1 to run the load test")
	}
	rate := envInt("THROUGHLINE_NOTIFIER_LOAD_RATE", 1000)
	secs := envInt("THROUGHLINE_NOTIFIER_LOAD_SECONDS", 30)
	nApps := envInt("THROUGHLINE_NOTIFIER_LOAD_APPS", rate*secs/2)

	// The repository: one commit desired by every app, one commit of records.
	base := t.TempDir()
	origin := filepath.Join(base, "origin.git")
	seed := filepath.Join(base, "seed")
	gittest.Run(t, base, "init", "-q", "--bare", "-b", "main", origin)
	gittest.Run(t, base, "clone", "-q", origin, seed)
	desired := gittest.Commit(t, seed, "overlays", map[string]string{"README": "gitops\n"})
	setup := time.Now()
	records := make(map[string]string, nApps)
	for i := range nApps {
		app := fmt.Sprintf("app%05d", i)
		y, err := reconciling(t, app, desired).Marshal()
		must(t, err)
		records[promotion.RecordPath(app, "production")] = string(y)
	}
	seedTip := gittest.Commit(t, seed, "records", records)
	gittest.Run(t, seed, "push", "-q", "origin", "main")
	work := filepath.Join(base, "work")
	gittest.Run(t, base, "clone", "-q", origin, work)
	r, err := gitrepo.Open(context.Background(), work)
	must(t, err)
	r.Env = []string{"HOME=" + base, "GIT_CONFIG_NOSYSTEM=1"}
	t.Logf("setup: %d records in %s", nApps, time.Since(setup).Round(time.Millisecond))

	live := &fakeLive{m: map[string]*Live{}}
	for i := range nApps {
		app := fmt.Sprintf("app%05d", i)
		live.m[app] = verified(app)
	}
	proc := &Processor{Git: &evidence.GitSink{Repo: r, Branch: "main", Attempts: 20}, Live: live}
	h, err := New(Config{FluxKey: fluxKey, Rate: -1}, proc, nil)
	must(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxIdleConns: 1024}}

	// Pre-sign the bodies: the generator must not be the bottleneck.
	bodies := make([][]byte, nApps)
	sigs := make([]string, nApps)
	for i := range nApps {
		bodies[i] = fluxBody(t, fmt.Sprintf("app%05d", i), desired, "ReconciliationSucceeded")
		sigs[i] = sign(fluxKey, bodies[i])
	}

	type ack struct {
		app     int
		result  string
		latency time.Duration
	}
	var (
		mu   sync.Mutex
		acks []ack
		wg   sync.WaitGroup
	)
	total := rate * secs
	sent, next := 0, 0
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	for sent < total {
		<-tick.C
		// Catch up on late ticks so the offered rate holds on average.
		due := min(total, int(time.Since(start)*time.Duration(rate)/time.Second)+1)
		for ; sent < due; sent++ {
			app := next
			if (rng.IntN(2) == 0 || next >= nApps) && next > 0 {
				app = rng.IntN(next) // a duplicate of an event sent before
			} else {
				next++
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/flux", bytes.NewReader(bodies[app]))
				req.Header.Set(SignatureHeader, sigs[app])
				t0 := time.Now()
				resp, err := client.Do(req)
				res := "transport-error"
				if err == nil {
					var rep reply
					_ = json.NewDecoder(resp.Body).Decode(&rep)
					resp.Body.Close()
					res = rep.Result
				}
				d := time.Since(t0)
				mu.Lock()
				acks = append(acks, ack{app, res, d})
				mu.Unlock()
			}()
		}
	}
	tick.Stop()
	offered := time.Since(start)
	wg.Wait()
	drained := time.Since(start)

	// Git: every commit is one distinct event's evidence.
	commits, _ := strconv.Atoi(gittest.Run(t, origin, "rev-list", "--count", seedTip+"..main"))
	files := gittest.Run(t, origin, "ls-tree", "-r", "--name-only", "main", "evidence/")
	nFiles := 0
	if files != "" {
		nFiles = len(strings.Split(files, "\n"))
	}
	byResult := map[string][]time.Duration{}
	var all []time.Duration
	committed := map[int]bool{}
	for _, a := range acks {
		byResult[a.result] = append(byResult[a.result], a.latency)
		all = append(all, a.latency)
		if a.result == resultAccepted || a.result == resultDuplicate {
			committed[a.app] = true
		}
	}
	pct := func(ds []time.Duration, p float64) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		slices.Sort(ds)
		return ds[min(len(ds)-1, int(float64(len(ds))*p))]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "offered %d deliveries in %s (%d/s target), %d distinct events offered, all answered after %s\n",
		len(acks), offered.Round(time.Millisecond), rate, next, drained.Round(time.Millisecond))
	fmt.Fprintf(&b, "all answers: p50 %s p99 %s\n", pct(all, 0.5), pct(all, 0.99))
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range byResult {
			if !yield(k) {
				return
			}
		}
	}) {
		ds := byResult[k]
		fmt.Fprintf(&b, "  %-16s %6d  p50 %-12s p99 %s\n", k, len(ds), pct(ds, 0.5), pct(ds, 0.99))
	}
	fmt.Fprintf(&b, "git: %d commits, %d evidence files, %d distinct events acknowledged (accepted or duplicate)\n", commits, nFiles, len(committed))
	t.Log("\n" + b.String())
	if out := os.Getenv("THROUGHLINE_NOTIFIER_LOAD_OUT"); out != "" {
		must(t, os.WriteFile(out, []byte(b.String()), 0o644))
	}
	if commits != nFiles || commits != len(committed) {
		t.Fatalf("%d commits, %d evidence files, %d distinct events acknowledged: want all equal", commits, nFiles, len(committed))
	}
}
