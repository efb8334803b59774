package dashboardview

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/delivery"
)

// ScrapeEvery is how often ScrapeStory scrapes.
const ScrapeEvery = 10 * time.Minute

// ScrapeStory is what a Prometheus scraping serve's /metrics every
// ScrapeEvery would hold after the story of f (the chain view's fixture):
// at each scrape, the delivery metrics of a Collector refreshed at the
// branch's tip of that time (the newest commit at or before it), from the
// first commit to an hour after the last.
func ScrapeStory(tb testing.TB, f *chainfixture.Repo) *History {
	tb.Helper()
	ctx := context.Background()
	out, err := exec.CommandContext(ctx, "git", "-C", f.Dir, "log", "--first-parent", "--reverse", "--format=%H %ct", "HEAD").Output()
	if err != nil {
		tb.Fatalf("git log of %s: %v", f.Dir, err)
	}
	type commit struct {
		id string
		at time.Time
	}
	var commits []commit
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, ct, _ := strings.Cut(line, " ")
		sec, err := strconv.ParseInt(ct, 10, 64)
		if err != nil {
			tb.Fatalf("git log of %s: %q", f.Dir, line)
		}
		commits = append(commits, commit{id, time.Unix(sec, 0).UTC()})
	}
	h := NewHistory(tb)
	rd := &delivery.Reader{Repo: f.Repo}
	var tip string
	last := commits[len(commits)-1].at.Add(time.Hour)
	for at, i := commits[0].at, 0; !at.After(last); at = at.Add(ScrapeEvery) {
		for i < len(commits) && !commits[i].at.After(at) {
			tip = commits[i].id
			i++
		}
		c := &delivery.Collector{Reader: rd, Tip: func(context.Context) (string, error) { return tip, nil },
			Now: func() time.Time { return at }}
		if err := c.Refresh(ctx); err != nil {
			tb.Fatalf("delivery metrics at %s: %v", tip, err)
		}
		reg := prometheus.NewPedanticRegistry()
		if err := reg.Register(c); err != nil {
			tb.Fatal(err)
		}
		mfs, err := reg.Gather()
		if err != nil {
			tb.Fatal(err)
		}
		if err := h.Add(ctx, at, mfs); err != nil {
			tb.Fatal(err)
		}
	}
	return h
}
