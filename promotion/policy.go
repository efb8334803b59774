package promotion

import (
	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/promotion/policyfile"
)

// PolicyFile is the promotion policy's path at the repository root.
const PolicyFile = policyfile.File

// Policy is the repository's promotion policy (PolicyFile), the
// v1alpha1.PromotionPolicy document. Absent, every default is the strict one.
type Policy = v1alpha1.PromotionPolicy

// EnvironmentPolicy is one environment of the policy.
type EnvironmentPolicy = v1alpha1.EnvironmentPolicy

// RecordError is a record (or the policy) that cannot be used: unparseable,
// refused by the schema, or inconsistent (policyfile.RecordError).
type RecordError = policyfile.RecordError

// ParsePolicy reads the policy strictly (unknown fields refused) and checks
// its environment registry (environment.Check): policyfile.Parse.
func ParsePolicy(file string, data []byte) (*Policy, error) { return policyfile.Parse(file, data) }

// Registry is the environment registry of p, read from PolicyFile (the
// empty registry for a nil p). ParsePolicy has checked it.
func Registry(p *Policy) (*environment.Registry, error) { return policyfile.Registry(p) }

// ReadRootRegistry reads the environment registry of PolicyFile in the
// directory root (a work tree or the repository a plugin is given):
// policyfile.ReadRoot, which the render path calls directly.
func ReadRootRegistry(root string, maxFileSize int64) (*environment.Registry, error) {
	return policyfile.ReadRoot(root, maxFileSize)
}
