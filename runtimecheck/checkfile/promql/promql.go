// Package promql checks PromQL with Prometheus's own parser
// (github.com/prometheus/prometheus/promql/parser): Parse is the
// checkfile.QueryParser of the full binary (`throughline render`, the PR
// gate). The lean plugin binary must not import it: the parser links
// Prometheus's storage packages and client_golang's default registry,
// whose package inits issue 17 keeps off the plugin path.
package promql

import (
	"errors"
	"fmt"

	"github.com/prometheus/prometheus/promql/parser"
)

// Parse parses query as Prometheus does and refuses what it refuses; the
// error names the position (line:column) and what the parser expected.
func Parse(query string) error {
	p := parser.NewParser(parser.Options{})
	expr, err := p.ParseExpr(query)
	if err != nil {
		var errs parser.ParseErrors
		if errors.As(err, &errs) && len(errs) > 0 {
			return fmt.Errorf("PromQL %s", errs[0].Error())
		}
		return fmt.Errorf("PromQL: %w", err)
	}
	switch expr.Type() {
	case parser.ValueTypeScalar, parser.ValueTypeVector:
		return nil
	default:
		return fmt.Errorf("PromQL: the query returns a %s; a check compares one sample (a scalar or an instant vector)", expr.Type())
	}
}
