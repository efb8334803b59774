package gate

import (
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/throughline-dev/throughline/tracing"
)

// endCheck ends a gate's span with its verdict: ok, the number of
// findings and their rules (each once), or the failure to decide.
func endCheck(span trace.Span, ok bool, findings []Finding, err error) {
	span.SetAttributes(attribute.Bool("throughline.ok", ok && err == nil), attribute.Int("throughline.findings", len(findings)),
		tracing.Rules.StringSlice(Rules(findings)))
	tracing.End(span, err)
}

// Rules are the rule ids of findings, each once, in the order found.
func Rules(findings []Finding) []string {
	var rules []string
	for _, f := range findings {
		if !slices.Contains(rules, f.Rule) {
			rules = append(rules, f.Rule)
		}
	}
	return rules
}
