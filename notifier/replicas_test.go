package notifier

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/internal/gittest"
)

// replica is a second notifier with its own clone of the same origin: what
// another Pod of the Deployment is.
func (f *fixture) replica(t *testing.T) *httptest.Server {
	t.Helper()
	base := t.TempDir()
	work := filepath.Join(base, "work")
	gittest.Run(t, base, "clone", "-q", f.origin, work)
	r, err := gitrepo.Open(context.Background(), work)
	must(t, err)
	r.Env = []string{"HOME=" + base, "GIT_CONFIG_NOSYSTEM=1"}
	proc := &Processor{Git: &evidence.GitSink{Repo: r, Branch: "main", Attempts: 50}, Live: f.live, Now: func() time.Time { return t0.Add(time.Hour) }}
	h, err := New(Config{FluxKey: fluxKey, ArgoCDToken: argoTok, Rate: -1}, proc, nil)
	must(t, err)
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// Two replicas receiving the same deliveries at once (Flux and Argo CD
// both retry, a Service spreads them) make one commit per distinct event:
// the compare-and-swap push makes the loser re-read Git and find the
// evidence there.
func TestTwoReplicasOneCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "checkout", "payments")
	other := f.replica(t)
	before := f.commits()
	var wg sync.WaitGroup
	results := make(chan string, 16)
	for i := range 8 {
		app := []string{"checkout", "payments"}[i%2]
		url := []string{f.server.URL, other.URL}[(i/2)%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fluxBody(t, app, f.desired[app], "ReconciliationSucceeded")
			code, rep := postTo(t, url+"/v1/flux", body, map[string]string{SignatureHeader: sign(fluxKey, body)})
			if code != 200 {
				t.Errorf("%s via %s: %d %+v", app, url, code, rep)
			}
			results <- rep.Result
		}()
	}
	wg.Wait()
	close(results)
	n := map[string]int{}
	for r := range results {
		n[r]++
	}
	// Two replicas can build the very same commit (same parent, content
	// and second) at once: the second push finds the branch already there
	// and both answer "accepted" for one commit.
	if got := f.commits() - before; got != 2 || n[resultAccepted] < 2 || n[resultAccepted]+n[resultDuplicate] != 8 {
		t.Fatalf("%d commits, results %v: want 2 commits, every delivery accepted or duplicate", got, n)
	}
}
