package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
)

// The parameters file of a chart app: HelmParametersFile beside Chart.yaml.
const (
	// HelmParametersFile holds the Helm parameters of an Argo CD Helm-style
	// app (release name, namespace, value files, values, --set parameters,
	// capabilities), in Git beside Chart.yaml: the plugin and every CLI gate
	// read it, so they render the same objects from the same commit.
	HelmParametersFile = "throughline-helm.yaml"
	// HelmParametersAPIVersion and HelmParametersKind identify the file.
	HelmParametersAPIVersion = "throughline.dev/v1alpha1"
	HelmParametersKind       = "HelmParameters"
	// MaxHelmParametersFileSize caps the file (before the render's own cap
	// of every file).
	MaxHelmParametersFileSize = 256 << 10
	// MaxHelmParameterEntries caps each list of the file (valueFiles,
	// parameters, apiVersions).
	MaxHelmParameterEntries = 256
)

// RuleChartParametersDisagree refuses a plugin render of a chart app whose
// Application says something about the Helm parameters that the parameters
// file in Git does not (or that has no such file): the plugin would apply
// a render no gate computed.
const RuleChartParametersDisagree = "chart-parameters-disagree"

// The release name Helm accepts (DNS-1123 subdomain, at most 53
// characters) and a namespace (DNS-1123 label).
var (
	releaseNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	namespacePattern   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)

// helmFileFields are the file's top-level fields, in the order errors
// and docs name them.
var helmFileFields = []string{"apiVersion", "kind", "releaseName", "namespace", "valueFiles", "values", "parameters",
	"kubeVersion", "apiVersions", "skipCrds", "skipTests"}

// ParseHelmParametersFile decodes the parameters file of a chart app
// (file names it in errors): one YAML document, duplicate keys and
// unknown fields refused, every value of its type. Bad input is an
// *exitcode.InvalidInput naming file and the field
// (parameters[2].value). The returned options name file in From and the
// fields the file sets in Given.
func ParseHelmParametersFile(file string, data []byte) (HelmOptions, error) {
	opts, err := parseHelmFile(data)
	if err != nil {
		return HelmOptions{}, &exitcode.InvalidInput{File: file, Err: err}
	}
	opts.From = file
	return opts, nil
}

func parseHelmFile(data []byte) (HelmOptions, error) {
	var opts HelmOptions
	if len(data) > MaxHelmParametersFileSize {
		return opts, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), MaxHelmParametersFileSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return opts, fmt.Errorf("is empty: want apiVersion %s, kind %s", HelmParametersAPIVersion, HelmParametersKind)
	}
	if _, _, err := scanYAML(data, false, MaxYAMLAliasNodes); err != nil {
		return opts, err
	}
	for i, line := range strings.Split(string(data), "\n") {
		if t := strings.TrimRight(line, " \t\r"); i > 0 && (t == "---" || strings.HasPrefix(t, "--- ")) || t == "..." {
			return opts, fmt.Errorf("line %d: the file is one YAML document", i+1)
		}
	}
	js, err := sigyaml.YAMLToJSONStrict(data)
	if err != nil {
		return opts, fmt.Errorf("not YAML: %w", err)
	}
	var top map[string]json.RawMessage
	if err := strictJSON(js, &top); err != nil || top == nil {
		return opts, fmt.Errorf("not a mapping of %s", strings.Join(helmFileFields, ", "))
	}
	for k := range top {
		if !slices.Contains(helmFileFields, k) {
			return opts, fmt.Errorf("%s: unknown field (the fields are %s)", k, strings.Join(helmFileFields, ", "))
		}
	}
	var apiVersion, kind string
	for _, f := range []struct {
		name string
		dst  *string
	}{{"apiVersion", &apiVersion}, {"kind", &kind}, {"releaseName", &opts.ReleaseName}, {"namespace", &opts.Namespace},
		{"kubeVersion", &opts.KubeVersion}} {
		if err := helmFileString(top, f.name, f.dst); err != nil {
			return opts, err
		}
	}
	if apiVersion != HelmParametersAPIVersion || kind != HelmParametersKind {
		return opts, fmt.Errorf("apiVersion/kind %q/%q: want %s/%s", apiVersion, kind, HelmParametersAPIVersion, HelmParametersKind)
	}
	if err := opts.decodeLists(top); err != nil {
		return opts, err
	}
	for _, f := range []struct {
		name string
		dst  *bool
	}{{"skipCrds", &opts.SkipCRDs}, {"skipTests", &opts.SkipTests}} {
		if raw, ok := top[f.name]; ok {
			if err := strictJSON(raw, f.dst); err != nil {
				return opts, fmt.Errorf("%s: not true or false: %s", f.name, raw)
			}
		}
	}
	if raw, ok := top["values"]; ok {
		if opts.Values, err = helmFileValues(raw); err != nil {
			return opts, err
		}
	}
	for k := range top {
		if k != "apiVersion" && k != "kind" {
			opts.Given = append(opts.Given, k)
		}
	}
	sort.Strings(opts.Given)
	return opts, opts.validate()
}

// decodeLists reads valueFiles, apiVersions and parameters.
func (o *HelmOptions) decodeLists(top map[string]json.RawMessage) error {
	for _, f := range []struct {
		name string
		dst  *[]string
	}{{"valueFiles", &o.ValueFiles}, {"apiVersions", &o.APIVersions}} {
		raw, ok := top[f.name]
		if !ok {
			continue
		}
		if err := strictJSON(raw, f.dst); err != nil {
			return fmt.Errorf("%s: not a list of strings: %s", f.name, raw)
		}
		if len(*f.dst) > MaxHelmParameterEntries {
			return fmt.Errorf("%s: %d entries, at most %d", f.name, len(*f.dst), MaxHelmParameterEntries)
		}
		for i, v := range *f.dst {
			if strings.TrimSpace(v) == "" {
				return fmt.Errorf("%s[%d]: empty", f.name, i)
			}
		}
	}
	raw, ok := top["parameters"]
	if !ok {
		return nil
	}
	var list []json.RawMessage
	if err := strictJSON(raw, &list); err != nil {
		return fmt.Errorf("parameters: not a list of {name, value, forceString}: %s", raw)
	}
	if len(list) > MaxHelmParameterEntries {
		return fmt.Errorf("parameters: %d entries, at most %d", len(list), MaxHelmParameterEntries)
	}
	for i, e := range list {
		var p HelmParameter
		if err := strictJSON(e, &p); err != nil {
			return fmt.Errorf("parameters[%d]: want {name, value (a string: quote numbers), forceString}: %w", i, err)
		}
		if strings.TrimSpace(p.Name) == "" {
			return fmt.Errorf("parameters[%d].name: missing", i)
		}
		o.Parameters = append(o.Parameters, p)
	}
	return nil
}

// validate checks the values Helm would refuse later, naming the field.
func (o *HelmOptions) validate() error {
	if o.ReleaseName != "" && (len(o.ReleaseName) > 53 || !releaseNamePattern.MatchString(o.ReleaseName)) {
		return fmt.Errorf("releaseName: %q is not a Helm release name (lowercase DNS-1123, at most 53 characters)", o.ReleaseName)
	}
	if o.Namespace != "" && (len(o.Namespace) > 63 || !namespacePattern.MatchString(o.Namespace)) {
		return fmt.Errorf("namespace: %q is not a namespace name (lowercase DNS-1123 label)", o.Namespace)
	}
	return nil
}

// helmFileString reads the string field name of top into dst.
func helmFileString(top map[string]json.RawMessage, name string, dst *string) error {
	raw, ok := top[name]
	if !ok {
		return nil
	}
	if err := strictJSON(raw, dst); err != nil {
		return fmt.Errorf("%s: not a string: %s", name, raw)
	}
	return nil
}

// helmFileValues reads values: a YAML string, or a mapping (as Argo CD's
// valuesObject), kept as JSON (which is YAML).
func helmFileValues(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if _, _, err := scanYAML([]byte(s), false, MaxYAMLAliasNodes); err != nil {
			return "", fmt.Errorf("values: %w", err)
		}
		var m map[string]any
		if err := sigyaml.Unmarshal([]byte(s), &m); err != nil {
			return "", fmt.Errorf("values: not a YAML mapping: %w", err)
		}
		return s, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return "", fmt.Errorf("values: not a mapping or a YAML string: %s", raw)
	}
	return string(raw), nil
}

// strictJSON decodes one JSON value into v, unknown fields refused.
func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one value")
	}
	return nil
}

// readHelmParameters reads the parameters file of the chart app in dir
// through the confined filesystem (never outside the root, size-capped,
// traced for the plugin's cache): the zero options, From naming the file,
// when there is none.
func (a *App) readHelmParameters() (HelmOptions, error) {
	file := path.Join(a.RelDir(), HelmParametersFile)
	data, err := a.FS.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return HelmOptions{From: file}, nil
	}
	if err != nil {
		return HelmOptions{}, err
	}
	return ParseHelmParametersFile(file, data)
}

// chartParameters makes the file's parameters the chart app's (a.helm)
// and refuses what the plugin was given that disagrees with them
// (RuleChartParametersDisagree): a parameter of given.Given with another
// value than the file's (or the default when the file does not set it),
// and a destination namespace other than the release's namespace. The
// Application's name and its cluster's versions are not used: the render
// depends on the repository alone.
func (a *App) chartParameters(given HelmOptions) error {
	file, err := a.readHelmParameters()
	if err != nil {
		return err
	}
	a.helm = file
	eff := a.effectiveHelm()
	var why []string
	for _, name := range given.Given {
		if g, f := helmParameterValue(given, name, ""), helmParameterValue(eff, name, a.defaultRelease()); g != f {
			why = append(why, fmt.Sprintf("parameter %s is %s, the file says %s", name, g, f))
		}
	}
	if d := given.Destination; d != "" && d != eff.Namespace {
		why = append(why, fmt.Sprintf("the destination namespace (%s) is %q, the release's namespace %q", "ARGOCD_APP_NAMESPACE", d, eff.Namespace))
	}
	if len(why) == 0 {
		return nil
	}
	from := given.From
	if from == "" {
		from = EnvAppParameters
	}
	return &exitcode.Refusal{Rule: RuleChartParametersDisagree, File: from, Object: a.RelDir(),
		Reason: fmt.Sprintf("%s; a chart app's Helm parameters live in Git, in %s, which every gate reads: "+
			"write them there (and drop them from the Application, or give the same values) (rule %s)",
			strings.Join(why, "; "), file.From, RuleChartParametersDisagree)}
}

// effectiveHelm is a.helm with the defaults a render applies: the
// release named after the app directory, in namespace "default".
func (a *App) effectiveHelm() HelmOptions {
	h := a.helm
	if h.ReleaseName == "" {
		h.ReleaseName = a.defaultRelease()
	}
	if h.Namespace == "" {
		h.Namespace = "default"
	}
	return h
}

// defaultRelease is the release name when no parameter names one.
func (a *App) defaultRelease() string { return path.Base(a.RelDir()) }

// helmParameterValue is the parameter name of h as a comparable string.
func helmParameterValue(h HelmOptions, name, defaultRelease string) string {
	q := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	switch name {
	case "releaseName":
		if h.ReleaseName == "" {
			return q(defaultRelease)
		}
		return q(h.ReleaseName)
	case "namespace":
		if h.Namespace == "" {
			return q("default")
		}
		return q(h.Namespace)
	case "valueFiles":
		return q(nonNil(h.ValueFiles))
	case "values":
		var v any
		if err := sigyaml.Unmarshal([]byte(h.Values), &v); err != nil {
			return q(h.Values)
		}
		return q(v)
	case "parameters":
		ps := slices.Clone(h.Parameters)
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
		return q(nonNil(ps))
	case "kubeVersion":
		return q(strings.TrimPrefix(h.KubeVersion, "v"))
	case "apiVersions":
		return q(nonNil(h.APIVersions))
	case "skipCrds":
		return q(h.SkipCRDs)
	case "skipTests":
		return q(h.SkipTests)
	}
	return ""
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
