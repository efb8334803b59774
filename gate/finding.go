package gate

import "github.com/throughline-dev/throughline/promotion"

// Finding is one reason a gate refuses (or, in a report's Warnings and
// Preexisting, one it lists without refusing), typed: the CLI prints it,
// tests assert on its Rule and fields, and its Reason is the one sentence
// listed in the report's Refusals.
type Finding struct {
	// Rule is the rule's stable id (the Rule* constants of this package,
	// of package trust, environment or chartsource).
	Rule string `json:"rule"`
	// Class is the class of the rendered difference the finding is about
	// (artifact, capacity, routing, permission, boundary, other), where it
	// is about one.
	Class promotion.Class `json:"class,omitempty"`
	// Environment is the environment the finding is about.
	Environment string `json:"environment,omitempty"`
	// File is the repository file (GitOps-root-relative) at fault.
	File string `json:"file,omitempty"`
	// Object is the object (kind/namespace/name, or an image reference).
	Object string `json:"object,omitempty"`
	// Field is the field of File or Object at fault.
	Field string `json:"field,omitempty"`
	// Old and New are the field's value before and after the change,
	// where the finding is about a changed value.
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
	// Reason is the finding said in one sentence.
	Reason string `json:"reason"`
}
