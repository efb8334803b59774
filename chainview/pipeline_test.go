package chainview

import (
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/promotion"
)

// TestStages: the pipeline says how the digest stands between two
// environments.
func TestStages(t *testing.T) {
	t.Parallel()
	rec := func(d string) *promotion.Record {
		return &promotion.Record{Artifact: promotion.Artifact{Digest: "sha256:" + d}}
	}
	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	for _, tc := range []struct {
		name       string
		prev, here *promotion.Record
		want       string
	}{
		{"neither", nil, nil, "no digest yet"},
		{"only here", nil, rec(a), "sha256:aaaaaaaaaaaa came from elsewhere (staging has no record)"},
		{"not yet here", rec(a), nil, "sha256:aaaaaaaaaaaa of staging not promoted here yet"},
		{"promoted", rec(a), rec(a), "sha256:aaaaaaaaaaaa promoted from staging"},
		{"another digest", rec(b), rec(a), "staging has sha256:bbbbbbbbbbbb, here sha256:aaaaaaaaaaaa"},
	} {
		app := &App{Name: "web", Cells: []*Cell{{Environment: "staging", Record: tc.prev}, {Environment: "production", Record: tc.here}}}
		s := app.Stages()
		if len(s) != 2 || s[0].Moving != "" || s[1].Moving != tc.want {
			t.Errorf("%s: %+v, want %q", tc.name, s, tc.want)
		}
	}
}
