package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
)

// EnvAppParameters is the variable in which Argo CD hands a Config
// Management Plugin the Application's plugin parameters, as JSON: a list
// of {name, string | array | map}.
const EnvAppParameters = "ARGOCD_APP_PARAMETERS"

// MaxHelmParametersSize caps ARGOCD_APP_PARAMETERS (Argo CD passes it in
// the environment: a few KiB in practice).
const MaxHelmParametersSize = 1 << 20

// appParameter is one entry of ARGOCD_APP_PARAMETERS.
type appParameter struct {
	Name   string            `json:"name"`
	String *string           `json:"string,omitempty"`
	Array  []string          `json:"array,omitempty"`
	Map    map[string]string `json:"map,omitempty"`
}

// ParseHelmParameters reads the Helm parameters of a chart app from the
// plugin parameters (ARGOCD_APP_PARAMETERS), named as Argo CD's Helm source
// names them:
//   - releaseName, namespace, values (YAML), kubeVersion: strings;
//   - valueFiles, apiVersions: arrays (a string is one entry);
//   - parameters: a map name -> value (--set), or a string holding the
//     list Argo CD's helm.parameters holds ([{name, value, forceString}],
//     YAML or JSON), or an array of "name=value";
//   - skipCrds, skipTests: "true" or "false".
//
// Given lists the Helm parameters present. Other parameters (throughline's
// environment and app) are left alone. An
// empty input is no parameters. Bad input is an *exitcode.InvalidInput naming
// ARGOCD_APP_PARAMETERS and the parameter.
func ParseHelmParameters(data []byte) (HelmOptions, error) {
	opts := HelmOptions{From: EnvAppParameters}
	if len(bytes.TrimSpace(data)) == 0 {
		return opts, nil
	}
	bad := func(name string, err error) error {
		if name != "" {
			err = fmt.Errorf("parameter %q: %w", name, err)
		}
		return &exitcode.InvalidInput{File: EnvAppParameters, Err: err}
	}
	if len(data) > MaxHelmParametersSize {
		return opts, bad("", fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), MaxHelmParametersSize))
	}
	var params []appParameter
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&params); err != nil {
		return opts, bad("", fmt.Errorf("not a JSON list of parameters: %w", err))
	}
	if dec.More() {
		return opts, bad("", errors.New("text after the list of parameters"))
	}
	seen := map[string]bool{}
	for _, p := range params {
		if seen[p.Name] {
			return opts, bad(p.Name, errors.New("given twice"))
		}
		seen[p.Name] = true
		if err := opts.set(p); err != nil {
			return opts, bad(p.Name, err)
		}
		if helmParameterValue(HelmOptions{}, p.Name, "") != "" {
			opts.Given = append(opts.Given, p.Name)
		}
	}
	return opts, nil
}

// set applies one parameter.
func (o *HelmOptions) set(p appParameter) error {
	var err error
	switch p.Name {
	case "releaseName":
		o.ReleaseName, err = p.str()
	case "namespace":
		o.Namespace, err = p.str()
	case "values":
		o.Values, err = p.str()
	case "kubeVersion":
		o.KubeVersion, err = p.str()
	case "valueFiles":
		o.ValueFiles, err = p.list()
	case "apiVersions":
		o.APIVersions, err = p.list()
	case "skipCrds":
		o.SkipCRDs, err = p.boolean()
	case "skipTests":
		o.SkipTests, err = p.boolean()
	case "parameters":
		o.Parameters, err = p.helmParameters()
	}
	return err
}

func (p appParameter) str() (string, error) {
	if p.String == nil || p.Array != nil || p.Map != nil {
		return "", errors.New("must be a string")
	}
	return *p.String, nil
}

func (p appParameter) list() ([]string, error) {
	switch {
	case p.Map != nil:
		return nil, errors.New("must be an array (or a string)")
	case p.String != nil && p.Array != nil:
		return nil, errors.New("has both a string and an array")
	case p.String != nil:
		if *p.String == "" {
			return nil, nil
		}
		return []string{*p.String}, nil
	}
	return p.Array, nil
}

func (p appParameter) boolean() (bool, error) {
	s, err := p.str()
	if err != nil {
		return false, err
	}
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%q is not true or false", s)
	}
	return b, nil
}

// helmParameters reads --set parameters from a map, a list of "name=value"
// or a string holding Argo CD's [{name, value, forceString}].
func (p appParameter) helmParameters() ([]HelmParameter, error) {
	set := 0
	for _, b := range []bool{p.String != nil, p.Array != nil, p.Map != nil} {
		if b {
			set++
		}
	}
	if set > 1 {
		return nil, errors.New("must be one of a map, an array or a string")
	}
	var out []HelmParameter
	switch {
	case p.Map != nil:
		names := make([]string, 0, len(p.Map))
		for n := range p.Map {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, HelmParameter{Name: n, Value: p.Map[n]})
		}
	case p.Array != nil:
		for i, e := range p.Array {
			n, v, ok := strings.Cut(e, "=")
			if !ok {
				return nil, fmt.Errorf("[%d] %q is not name=value", i, e)
			}
			out = append(out, HelmParameter{Name: n, Value: v})
		}
	case p.String != nil && strings.TrimSpace(*p.String) != "":
		if err := sigyaml.UnmarshalStrict([]byte(*p.String), &out); err != nil {
			return nil, fmt.Errorf("not a list of {name, value, forceString}: %w", err)
		}
	}
	for i, hp := range out {
		if strings.TrimSpace(hp.Name) == "" {
			return nil, fmt.Errorf("[%d] has no name", i)
		}
	}
	return out, nil
}
