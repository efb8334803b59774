package policy

import (
	"fmt"
	"sort"
	"strings"

	"github.com/throughline-dev/throughline/exitcode"
)

// Rule names a refusal.
type Rule string

// The rules.
const (
	RuleUnpinnedImage        Rule = "unpinned-image"
	RuleMissingImage         Rule = "missing-image"
	RuleDuplicateObject      Rule = "duplicate-object"
	RuleFloatingRemote       Rule = "floating-remote-resource"
	RuleFloatingChartVersion Rule = "floating-chart-version"
	// RuleSecretPlaintext refuses a v1 Secret carrying data or stringData.
	RuleSecretPlaintext Rule = "secret-plaintext"
)

// Violation is one refusal, naming where it is and what is wrong.
type Violation struct {
	Rule   Rule   `json:"rule"`
	File   string `json:"file,omitempty"`
	Object string `json:"object,omitempty"`
	Field  string `json:"field,omitempty"`
	Value  string `json:"value,omitempty"`
	Reason string `json:"reason"`
}

// String is one line that reads well in Argo CD's ComparisonError.
func (v Violation) String() string {
	var b strings.Builder
	b.WriteString(string(v.Rule))
	b.WriteString(": ")
	if v.Object != "" {
		b.WriteString(v.Object)
		b.WriteString(": ")
	}
	if v.Field != "" {
		b.WriteString(v.Field)
		b.WriteString(": ")
	}
	b.WriteString(v.Reason)
	if v.File != "" {
		fmt.Fprintf(&b, " (in %s)", v.File)
	}
	return b.String()
}

// Refusal is the error returned when a render breaks policy; it carries
// every violation.
type Refusal struct {
	Violations []Violation
}

func (r *Refusal) Error() string {
	lines := make([]string, 0, len(r.Violations)+1)
	lines = append(lines, fmt.Sprintf("refused by throughline policy: %d violation(s)", len(r.Violations)))
	for _, v := range r.Violations {
		lines = append(lines, "  - "+v.String())
	}
	return strings.Join(lines, "\n")
}

// ExitCode is exitcode.Refused: a policy refusal is a refusal.
func (r *Refusal) ExitCode() int { return exitcode.Refused }

// Is matches exitcode.ErrRefused.
func (r *Refusal) Is(target error) bool { return target == exitcode.ErrRefused }

func sortViolations(vs []Violation) {
	sort.SliceStable(vs, func(i, j int) bool {
		a, b := vs[i], vs[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Object != b.Object {
			return a.Object < b.Object
		}
		return a.Field < b.Field
	})
}
