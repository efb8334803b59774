package promotion

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// PolicyApprovalDir holds one policy approval per protected environment
// (approvals/policy/<env>.yaml): the signed approvals of a change to what
// judges the environment (gate's judges step).
const PolicyApprovalDir = "approvals/policy"

// PolicyApprovalKind is the kind of a policy approval document.
const PolicyApprovalKind = "PolicyApproval"

// PolicyApprovalPath is env's policy approval file.
func PolicyApprovalPath(env string) string { return path.Join(PolicyApprovalDir, env+".yaml") }

// PolicyApproval is the approvals of one change to what judges Environment:
// its registry entry, the files it names, the allowed signers, the
// allow-list entries that apply to it and the runtime checks of the
// environments it promotes from. Change is the hash of that change (the
// gate computes it from the pull request's base and head); an approval
// counts only for that hash, before it expires, when one commit signed by
// its approver wrote it. Changes are the change in words, for the reviewer:
// the hash, not the words, is what is approved.
type PolicyApproval struct {
	APIVersion  string     `json:"apiVersion"`
	Kind        string     `json:"kind"`
	Environment string     `json:"environment"`
	Change      string     `json:"change"`
	Changes     []string   `json:"changes"`
	Approvals   []Approval `json:"approvals"`
}

// changeRE is a change hash.
var changeRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ParsePolicyApproval decodes env's policy approval file strictly (one
// document, no unknown field, its own environment, a sha256 change, every
// approval naming an approver, the change and its times).
func ParsePolicyApproval(file string, data []byte) (*PolicyApproval, error) {
	if len(data) > maxRecordSize {
		return nil, &RecordError{File: file, Err: fmt.Errorf("%d bytes exceeds the %d byte limit", len(data), maxRecordSize)}
	}
	if bytes.Contains(data, []byte("\n---")) || bytes.HasPrefix(bytes.TrimSpace(data), []byte("---")) {
		return nil, &RecordError{File: file, Err: errors.New("must be exactly one YAML document")}
	}
	js, err := sigyaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, &RecordError{File: file, Err: fmt.Errorf("not YAML or JSON: %w", err)}
	}
	var p PolicyApproval
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, &RecordError{File: file, Err: fmt.Errorf("decoding: %w", err)}
	}
	if err := p.Validate(); err != nil {
		return nil, &RecordError{File: file, Err: err}
	}
	if want := PolicyApprovalPath(p.Environment); path.Clean(file) != want && !strings.HasSuffix(file, "/"+want) {
		return nil, &RecordError{File: file, Err: fmt.Errorf("environment: %q is another environment's (its file is %s)", p.Environment, want)}
	}
	return &p, nil
}

// Validate checks the document's fields, naming the first that is wrong.
func (p *PolicyApproval) Validate() error {
	switch {
	case p.APIVersion != v1alpha1.APIVersion:
		return fmt.Errorf("apiVersion: %q, want %s", p.APIVersion, v1alpha1.APIVersion)
	case p.Kind != PolicyApprovalKind:
		return fmt.Errorf("kind: %q, want %s", p.Kind, PolicyApprovalKind)
	case !nameRE.MatchString(p.Environment):
		return fmt.Errorf("environment: %q is not an environment name", p.Environment)
	case !changeRE.MatchString(p.Change):
		return fmt.Errorf("change: %q is not sha256:<64 hex>", p.Change)
	}
	seen := map[string]bool{}
	for i, a := range p.Approvals {
		field := fmt.Sprintf("approvals[%d]", i)
		switch {
		case strings.TrimSpace(a.Approver) == "":
			return fmt.Errorf("%s.approver: required", field)
		case seen[a.Approver]:
			return fmt.Errorf("%s.approver: %s approves twice", field, a.Approver)
		case a.InputHash != p.Change:
			return fmt.Errorf("%s.inputHash: %s, the document's change is %s", field, a.InputHash, p.Change)
		case a.ApprovedAt.IsZero() || a.ExpiresAt.IsZero():
			return fmt.Errorf("%s: approvedAt and expiresAt are required", field)
		case !a.ExpiresAt.After(a.ApprovedAt):
			return fmt.Errorf("%s.expiresAt: %s is not after approvedAt %s", field, a.ExpiresAt.Format(time.RFC3339), a.ApprovedAt.Format(time.RFC3339))
		}
		seen[a.Approver] = true
	}
	return nil
}

// Marshal validates p and encodes it as YAML.
func (p *PolicyApproval) Marshal() ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, &RecordError{File: PolicyApprovalPath(p.Environment), Err: err}
	}
	js, err := json.Marshal(p)
	if err != nil {
		return nil, &RecordError{File: PolicyApprovalPath(p.Environment), Err: err}
	}
	return orderedYAML(js)
}
