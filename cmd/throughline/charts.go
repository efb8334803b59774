package main

import (
	"context"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/cli"
	"github.com/throughline-dev/throughline/render"
)

// chartSource is the source of the remote Helm charts a render meets: the
// packages the repository's lock files pin, fetched by digest with the
// Docker keychain's credentials and kept in the chart cache (the one `pin`
// fills), as the plugin does.
func chartSource() render.ChartSource {
	return chartsource.ForRender{Fetcher: chartsource.NewFetcher(chartsource.Options{
		CacheDir: cli.DefaultChartCacheDir(), UserAgent: "throughline/" + buildVersion(),
	})}
}

// openRepo opens the GitOps repository at dir (fetching its remote) with the
// chart source its renders use.
func openRepo(ctx context.Context, dir string) (*gitops.Repo, error) {
	r, err := gitops.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	r.Charts = chartSource()
	return r, nil
}
