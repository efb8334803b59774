package promql

import (
	"strings"
	"testing"
)

// FuzzParse feeds Parse the queries a checks file in a pull request may
// hold: never a panic, and every refusal starts with "PromQL" (the
// checks file's error names the field around it).
func FuzzParse(f *testing.F) {
	for _, q := range []string{
		`sum(rate(http_requests_total{code=~"5.."}[5m])) / sum(rate(http_requests_total[5m]))`,
		`histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))`,
		`up{job="web"} == 1`,
		`rate(x[5m]`,
		`x[5m]`,
		`"a string"`,
		`{__name__=~".+"} offset 1d @ 1700000000`,
		`((((((((((1))))))))))`,
		"x # a comment\n",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if err := Parse(q); err != nil && !strings.HasPrefix(err.Error(), "PromQL") {
			t.Fatalf("%q: the error does not say PromQL: %v", q, err)
		}
	})
}
