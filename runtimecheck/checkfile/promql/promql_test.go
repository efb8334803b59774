package promql_test

import (
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/runtimecheck/checkfile"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile/promql"
)

func TestParse(t *testing.T) {
	cases := []struct {
		query string
		want  string // "" = accepted; else in the error
	}{
		{`sum(rate(http_requests_total{code=~"5.."}[5m])) / sum(rate(http_requests_total[5m]))`, ""},
		{`histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))`, ""},
		{`vector(1)`, ""},
		{`sum(rate(x[5m])`, "1:"},
		{`up{job="x"`, "1:"},
		{`rate(x)`, "range vector"},
		{`no_such_function(x)`, "unknown function"},
		{`up +`, "1:"},
		{`rate(x[5m])[10m:]`, "matrix"},
		{`"a string"`, "string"},
	}
	for _, tc := range cases {
		err := promql.Parse(tc.query)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.query, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err %v, want %q", tc.query, err, tc.want)
		}
	}
}

// TestLexQueryAgrees: what the lean check refuses Prometheus refuses too
// (the light check never refuses a valid query).
func TestLexQueryAgrees(t *testing.T) {
	for _, q := range []string{
		`sum(rate(http_requests_total{code=~"5..",path!~'/x\'y'}[5m] offset 1m))`,
		"label_replace(up, \"a\", \"$1\", \"b\", `(.*)`)",
		"sum by (le) (rate(x[5m])) # a comment with ( unbalanced",
		`{__name__=~"up|down"} > bool 0`,
	} {
		if err := promql.Parse(q); err != nil {
			t.Errorf("prometheus refuses %s: %v", q, err)
		}
		if err := checkfile.LexQuery(q); err != nil {
			t.Errorf("LexQuery refuses %s: %v", q, err)
		}
	}
	for _, q := range []string{`sum(x`, `x)`, `{a="b"]`, `"open`, "up\x00"} {
		if checkfile.LexQuery(q) == nil {
			t.Errorf("LexQuery accepts %q", q)
		}
		if promql.Parse(q) == nil {
			t.Errorf("prometheus accepts %q", q)
		}
	}
}

// TestParsePosition: the message of a malformed query names the position.
func TestParsePosition(t *testing.T) {
	err := promql.Parse("sum(rate(x[5m])")
	if err == nil || !strings.HasPrefix(err.Error(), "PromQL 1:") {
		t.Errorf("err = %v", err)
	}
	t.Log(err)
}
