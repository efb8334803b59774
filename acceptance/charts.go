package acceptance

import (
	"context"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/render"
)

// Charts is spec.charts of the Acceptance of a built app: every chart the
// render used, pinned by digest, with its values schema (nil when the app
// renders no chart).
func Charts(ctx context.Context, app *render.App) ([]v1alpha1.Chart, error) {
	used, err := app.ChartsUsed(ctx)
	if err != nil {
		return nil, err
	}
	var out []v1alpha1.Chart
	for _, u := range used {
		c := v1alpha1.Chart{Name: u.Name, Version: u.Version, Digest: u.Digest, Source: u.Source}
		if u.SchemaDigest != "" {
			c.ValuesSchema = &v1alpha1.ChartValuesSchema{Digest: u.SchemaDigest, ID: u.SchemaID, Version: u.SchemaVersion}
		}
		out = append(out, c)
	}
	return out, nil
}
