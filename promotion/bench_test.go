package promotion

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	kyaml "go.yaml.in/yaml/v3"
	sigyaml "sigs.k8s.io/yaml"
)

// benchRecord is an ACCEPTED record as the notifier writes it (about
// 1.8 KB): what the web view parses 12,000 of at 50 apps x 4
// environments x 20 promotions (chainview BenchmarkHistory).
func benchRecord(b *testing.B) []byte {
	b.Helper()
	at := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	d, h := "sha256:"+strings.Repeat("ab", 32), "sha256:"+strings.Repeat("1", 64)
	rec, err := NewCandidate("app001", 1, Artifact{Image: "r.example/app:1.0.0@" + d, Digest: d, SourceCommit: strings.Repeat("2d", 20)},
		Target{Environment: "staging", Path: "apps/app001/overlays/staging", Cluster: "staging-1", RenderedHash: h, BaseRenderedHash: h,
			Renderer: "v1"}, at, "throughline promote propose")
	if err != nil {
		b.Fatal(err)
	}
	v := VerifiedIn{Environment: "dev", DesiredRevision: strings.Repeat("3a", 20), ObservedRevision: strings.Repeat("3a", 20), RenderedHash: h,
		RuntimeEvidence: "evidence/dev/app001/x.json", EvidenceCommit: strings.Repeat("4b", 20)}
	for _, err := range []error{
		rec.Verify(v, at.Add(time.Minute), "throughline promote verify"),
		rec.Approve("alice@example.com", rec.InputFor("v1"), at.Add(48*time.Hour), at.Add(2*time.Minute)),
		rec.Reconcile(strings.Repeat("5c", 20), at.Add(3*time.Minute), "throughline promote reconcile"),
		rec.Accept(strings.Repeat("5c", 20), "evidence/staging/app001/x.json", at.Add(4*time.Minute), "throughline serve"),
	} {
		if err != nil {
			b.Fatal(err)
		}
	}
	data, err := rec.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkParse is Parse of one record and its steps: the YAML 1.1
// decode to JSON (sigs.k8s.io/yaml), the promotion/v1 JSON schema, the
// strict decode into the struct and Validate; and, beside them, the YAML
// 1.2 decode (go.yaml.in/yaml/v3) of the same bytes, the other parser the
// ecosystem has.
func BenchmarkParse(b *testing.B) {
	data := benchRecord(b)
	js, err := sigyaml.YAMLToJSONStrict(data)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(data)), "bytes/record")
	for _, bc := range []struct {
		name string
		f    func() error
	}{
		{"all", func() error { _, err := Parse("promotion/app001/staging.yaml", data); return err }},
		{"yaml-to-json", func() error { _, err := sigyaml.YAMLToJSONStrict(data); return err }},
		{"schema", func() error { return validateJSON("x", js) }},
		{"decode", func() error {
			var r Record
			dec := json.NewDecoder(bytes.NewReader(js))
			dec.DisallowUnknownFields()
			return dec.Decode(&r)
		}},
		{"yaml-v3-to-any", func() error { var v any; return kyaml.Unmarshal(data, &v) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.f(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
