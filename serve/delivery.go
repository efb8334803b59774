package serve

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/delivery"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
)

// deliveryFlags turn on the delivery metrics of serve's /metrics
// (docs/delivery-metrics.md), read from the notifier's repository.
type deliveryFlags struct {
	on       bool
	interval time.Duration
	limit    int
}

func (d *deliveryFlags) add(f *pflag.FlagSet) {
	f.BoolVar(&d.on, "delivery-metrics", true, "expose the delivery metrics of the records and evidence in Git on /metrics "+
		"(read from --notifier-repo's branch; see docs/delivery-metrics.md)")
	f.DurationVar(&d.interval, "delivery-metrics-interval", delivery.DefaultInterval,
		"ask Git this often whether the records branch moved, and read the delivery metrics again when it did")
	f.IntVar(&d.limit, "delivery-metrics-max-series", delivery.DefaultLimit,
		"label at most this many app and environment pairs of the environment registry; the others are summed as app=\"_other\"")
}

// start registers the delivery metrics in reg and refreshes them until ctx
// ends (nothing when they are off, the metrics server is off, or there is
// no repository to read).
func (d *deliveryFlags) start(ctx context.Context, metricsAddr string, n *notifierFlags, reg prometheus.Registerer, log zerolog.Logger) error {
	if !d.on || metricsAddr == "0" {
		return nil
	}
	if d.interval <= 0 || d.limit < 1 {
		return exitcode.Usagef("--delivery-metrics-interval %s, --delivery-metrics-max-series %d: want more than 0", d.interval, d.limit)
	}
	log = log.With().Str("component", "delivery-metrics").Logger()
	repo, branch, err := d.repository(ctx, n)
	if err != nil || repo == nil {
		return err
	}
	c := &delivery.Collector{Reader: &delivery.Reader{Repo: repo}, Limit: d.limit, Interval: d.interval, Tip: tipOf(repo, branch, n.git.url != ""),
		OnError: func(err error) { log.Warn().Err(err).Msg("delivery metrics: cannot read the repository") }}
	if err := reg.Register(c); err != nil {
		return fmt.Errorf("registering the delivery metrics: %w", err)
	}
	log.Info().Str("branch", branch).Dur("interval", d.interval).Msg("serving the delivery metrics")
	go c.Run(ctx)
	return nil
}

// tipOf is how the metrics find the records branch's tip without ever
// writing to the notifier's repository: the in-process clone (inProcess)
// asks its remote and fetches a missing commit under the clone's lock,
// serialized with the notifier's writes; a clone driven by the git
// command line is only read: its remote-tracking branch, which every
// write and resync of the notifier fetches (a concurrent fetch of ours
// could make one of the notifier's fail on a locked ref).
func tipOf(repo *gitops.Repo, branch string, inProcess bool) func(context.Context) (string, error) {
	if inProcess {
		return func(ctx context.Context) (string, error) { return repo.BranchTip(ctx, branch) }
	}
	return func(ctx context.Context) (string, error) {
		if repo.Remote != "" {
			if sha, err := repo.Resolve(ctx, "refs/remotes/"+repo.Remote+"/"+branch); err == nil {
				return sha, nil
			}
		}
		return repo.Resolve(ctx, "refs/heads/"+branch)
	}
}

// repository is the notifier's repository and records branch, else a
// clone at --notifier-repo (nil when there is neither).
func (d *deliveryFlags) repository(ctx context.Context, n *notifierFlags) (*gitops.Repo, string, error) {
	repo := n.repo
	if repo == nil {
		if n.repoDir == "" {
			return nil, "", nil
		}
		var err error
		if repo, err = gitops.OpenLocal(ctx, n.repoDir); err != nil {
			return nil, "", err
		}
		if err := repo.ReadInProcess(); err != nil { // every version of every record: no git process each
			return nil, "", err
		}
	}
	branch := n.branch
	if n.svc != nil {
		branch = n.svc.Branch()
	}
	if branch == "" {
		branch = repo.Base
	}
	return repo, branch, nil
}
