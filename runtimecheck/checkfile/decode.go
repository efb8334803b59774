package checkfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// The file is decoded one level at a time, each level strictly into a raw
// shape whose numbers and durations stay json.RawMessage: every error then
// names its field path with indices (checks[1].prometheus.threshold), and a
// value of the wrong type reads as what it is ("not a number: \"1%\""),
// never as Go's unmarshal message.

type rawFile struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Soak       json.RawMessage   `json:"soak"`
	Checks     []json.RawMessage `json:"checks"`
}

type rawCheck struct {
	Name             string          `json:"name"`
	Interval         json.RawMessage `json:"interval"`
	FailureThreshold json.RawMessage `json:"failureThreshold"`
	// UnverifiableAfter: how long the check may stay Unverifiable.
	UnverifiableAfter json.RawMessage `json:"unverifiableAfter"`
	Prometheus        json.RawMessage `json:"prometheus"`
	HTTP              json.RawMessage `json:"http"`
	Job               json.RawMessage `json:"job"`
}

type rawPrometheus struct {
	Query     string          `json:"query"`
	Op        string          `json:"op"`
	Threshold json.RawMessage `json:"threshold"`
}

type rawHTTP struct {
	Service      json.RawMessage `json:"service"`
	Path         string          `json:"path"`
	ExpectStatus json.RawMessage `json:"expectStatus"`
	BodyMatch    string          `json:"bodyMatch"`
	MaxLatency   json.RawMessage `json:"maxLatency"`
}

type rawService struct {
	Namespace string          `json:"namespace"`
	Name      string          `json:"name"`
	Port      json.RawMessage `json:"port"`
}

type rawJob struct {
	Image              string          `json:"image"`
	Command            []string        `json:"command"`
	Args               []string        `json:"args"`
	ServiceAccountName string          `json:"serviceAccountName"`
	Deadline           json.RawMessage `json:"deadline"`
}

// decode reads data (YAML, duplicate keys refused) into RuntimeChecks,
// checking the file's apiVersion and kind and every value's type.
func decode(data []byte) (*v1alpha1.RuntimeChecks, error) {
	js, err := sigyaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	var f rawFile
	if err := strictly(js, "", &f); err != nil {
		return nil, err
	}
	if f.APIVersion != v1alpha1.APIVersion {
		return nil, fieldErr("apiVersion", "%q: want %s", f.APIVersion, v1alpha1.APIVersion)
	}
	if f.Kind != Kind {
		return nil, fieldErr("kind", "%q: want %s", f.Kind, Kind)
	}
	rc := &v1alpha1.RuntimeChecks{}
	if rc.Soak, err = duration("soak", f.Soak); err != nil {
		return nil, err
	}
	if len(f.Checks) == 0 {
		return nil, fieldErr("checks", "empty: a file declares at least one check (delete the file to declare none)")
	}
	if len(f.Checks) > MaxChecks {
		return nil, fieldErr("checks", "%d checks: at most %d", len(f.Checks), MaxChecks)
	}
	rc.Checks = make([]v1alpha1.RuntimeCheck, len(f.Checks))
	for i, raw := range f.Checks {
		if err := decodeCheck(fmt.Sprintf("checks[%d]", i), raw, &rc.Checks[i]); err != nil {
			return nil, err
		}
	}
	return rc, nil
}

func decodeCheck(field string, raw json.RawMessage, c *v1alpha1.RuntimeCheck) error {
	var r rawCheck
	if err := strictly(raw, field, &r); err != nil {
		return err
	}
	var err error
	c.Name = r.Name
	if c.Interval, err = duration(field+".interval", r.Interval); err != nil {
		return err
	}
	if c.FailureThreshold, err = integer(field+".failureThreshold", r.FailureThreshold, math.MinInt32, math.MaxInt32); err != nil {
		return err
	}
	if present(r.UnverifiableAfter) {
		d, err := duration(field+".unverifiableAfter", r.UnverifiableAfter)
		if err != nil {
			return err
		}
		c.UnverifiableAfter = &d
	}
	n := 0
	if present(r.Prometheus) {
		n++
		c.Prometheus = &v1alpha1.PrometheusCheck{}
		if err := decodePrometheus(field+".prometheus", r.Prometheus, c.Prometheus); err != nil {
			return err
		}
	}
	if present(r.HTTP) {
		n++
		c.HTTP = &v1alpha1.HTTPCheck{}
		if err := decodeHTTP(field+".http", r.HTTP, c.HTTP); err != nil {
			return err
		}
	}
	if present(r.Job) {
		n++
		c.Job = &v1alpha1.JobCheck{}
		if err := decodeJob(field+".job", r.Job, c.Job); err != nil {
			return err
		}
	}
	if n != 1 {
		return fieldErr(field, "%d kinds of check: set exactly one of prometheus, http, job", n)
	}
	return nil
}

func decodePrometheus(field string, raw json.RawMessage, p *v1alpha1.PrometheusCheck) error {
	var r rawPrometheus
	if err := strictly(raw, field, &r); err != nil {
		return err
	}
	p.Query, p.Op = r.Query, v1alpha1.Comparison(r.Op)
	if !present(r.Threshold) {
		return fieldErr(field+".threshold", "required: the number the query's value is compared with")
	}
	var err error
	p.Threshold, err = number(field+".threshold", r.Threshold)
	return err
}

func decodeHTTP(field string, raw json.RawMessage, h *v1alpha1.HTTPCheck) error {
	var r rawHTTP
	if err := strictly(raw, field, &r); err != nil {
		return err
	}
	h.Path, h.BodyMatch = r.Path, r.BodyMatch
	var err error
	if h.ExpectStatus, err = integer(field+".expectStatus", r.ExpectStatus, math.MinInt32, math.MaxInt32); err != nil {
		return err
	}
	if h.MaxLatency, err = duration(field+".maxLatency", r.MaxLatency); err != nil {
		return err
	}
	if !present(r.Service) {
		return fieldErr(field+".service", "required: the Service (name, port) the probe is sent to")
	}
	var s rawService
	if err := strictly(r.Service, field+".service", &s); err != nil {
		return err
	}
	h.Service.Namespace, h.Service.Name = s.Namespace, s.Name
	h.Service.Port, err = integer(field+".service.port", s.Port, math.MinInt32, math.MaxInt32)
	return err
}

func decodeJob(field string, raw json.RawMessage, j *v1alpha1.JobCheck) error {
	var r rawJob
	if err := strictly(raw, field, &r); err != nil {
		return err
	}
	j.Image, j.Command, j.Args, j.ServiceAccountName = r.Image, r.Command, r.Args, r.ServiceAccountName
	var err error
	j.Deadline, err = duration(field+".deadline", r.Deadline)
	return err
}

// present reports whether a field was given a value (null is none).
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// strictly decodes one level: unknown fields refused, a value of the wrong
// type named by its field path.
func strictly(js []byte, field string, v any) error {
	if present(js) && js[0] != '{' {
		return fieldErr(field, "not a mapping: %s", clip(js))
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fieldErr(join(field, te.Field), "want a %s, got a %s", te.Type.Kind(), te.Value)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fieldErr(field, "unknown field %s", name)
	}
	return fieldErr(field, "%w", err)
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "." + b
}

// number is a finite JSON number (a string, even "0.5", is not one).
func number(field string, raw json.RawMessage) (float64, error) {
	s := string(bytes.TrimSpace(raw))
	if s == "" || s[0] == '"' || s[0] == '[' || s[0] == '{' || s == "true" || s == "false" {
		return 0, fieldErr(field, "not a number: %s", clip(raw))
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fieldErr(field, "not a finite number: %s", clip(raw))
	}
	return f, nil
}

// integer is an integral JSON number in [lo, hi]; absent is zero.
func integer(field string, raw json.RawMessage, lo, hi int64) (int32, error) {
	if !present(raw) {
		return 0, nil
	}
	f, err := number(field, raw)
	if err != nil || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, fieldErr(field, "not an integer: %s", clip(raw))
	}
	return int32(f), nil
}

// duration is a Go duration string ("30s", "5m"); absent is zero.
func duration(field string, raw json.RawMessage) (metav1.Duration, error) {
	if !present(raw) {
		return metav1.Duration{}, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return metav1.Duration{}, fieldErr(field, "not a duration (want a string like \"30s\" or \"5m\"): %s", clip(raw))
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return metav1.Duration{}, fieldErr(field, "not a duration (want a string like \"30s\" or \"5m\"): %q", s)
	}
	if d < 0 {
		return metav1.Duration{}, fieldErr(field, "%s: must not be negative", d)
	}
	return metav1.Duration{Duration: d}, nil
}

// clip quotes a raw value for a message, cut to 64 bytes.
func clip(raw []byte) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return s
}
