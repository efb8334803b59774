package chartsource

import (
	"encoding/json"
	"fmt"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
)

// Dependency is one remote dependency of a Chart.yaml.
type Dependency struct {
	// Field is where it is: dependencies[i].
	Field string
	Ref   Ref
}

// ChartDependencies returns the remote dependencies (oci://, https://,
// http://) of a Chart.yaml (file names it in errors). Local ones (file://,
// empty) are the repository's own and skipped. The references are not
// validated: a range stays a range, for the caller to refuse.
func ChartDependencies(file string, data []byte) ([]Dependency, error) {
	js, err := sigyaml.YAMLToJSON(data)
	if err != nil {
		return nil, &exitcode.InvalidInput{File: file, Err: fmt.Errorf("not YAML: %w", err)}
	}
	var c struct {
		Dependencies []struct {
			Name       string `json:"name"`
			Version    string `json:"version"`
			Repository string `json:"repository"`
		} `json:"dependencies"`
	}
	if err := json.Unmarshal(js, &c); err != nil {
		return nil, &exitcode.InvalidInput{File: file, Err: fmt.Errorf("field dependencies: %w", err)}
	}
	var out []Dependency
	for i, d := range c.Dependencies {
		if IsRemote(d.Repository) {
			out = append(out, Dependency{Field: fmt.Sprintf("dependencies[%d]", i), Ref: Ref{Repo: d.Repository, Name: d.Name, Version: d.Version}})
		}
	}
	return out, nil
}
