package cmp_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	kubeyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/throughline-dev/throughline/cmp"
)

// TestOutputReadsAsArgoCDReadsIt: argocd-cmp-server splits the plugin's
// stdout with Kubernetes' YAMLOrJSONDecoder (gitops-engine kube.SplitYAML),
// which reads a stream starting with "{" as JSON values and fails on a
// "---" after the first one. The objects are JSON documents, so the stream
// must start with a document separator; every object and the Acceptance
// must come out, cached or not.
func TestOutputReadsAsArgoCDReadsIt(t *testing.T) {
	t.Parallel()
	root := writeRepo(t, repoFiles("r.example.test/web:1@"+digest))
	cache := &cmp.Cache{Dir: t.TempDir()}
	for _, pass := range []string{"render", "cache hit"} {
		res, err := generateApp(t, root, "1111111111111111111111111111111111111111", cache)
		if err != nil {
			t.Fatal(err)
		}
		if res.CacheHit != (pass == "cache hit") {
			t.Fatalf("%s: hit=%v", pass, res.CacheHit)
		}
		// Argo CD v2.14's apimachinery (v0.31) reads a stream whose first
		// byte is "{" as JSON values only; this module's newer decoder
		// falls back to YAML, so check the first byte as well.
		if first := bytes.TrimLeft(res.Manifests, " \t\r\n"); len(first) > 0 && first[0] == '{' &&
			bytes.Contains(res.Manifests, []byte("\n---\n")) {
			t.Errorf("%s: the stream starts with a JSON object and has more documents: Argo CD v2.14 cannot read it\n%s",
				pass, res.Manifests)
		}
		d := kubeyaml.NewYAMLOrJSONDecoder(bytes.NewReader(res.Manifests), 4096)
		var kinds []string
		for {
			var ext runtime.RawExtension
			err := d.Decode(&ext)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: Argo CD's decoder fails: %v\n%s", pass, err, res.Manifests)
			}
			if len(bytes.TrimSpace(ext.Raw)) == 0 || string(ext.Raw) == "null" {
				continue
			}
			var tm struct{ Kind string }
			if err := kubeyaml.Unmarshal(ext.Raw, &tm); err != nil {
				t.Fatal(err)
			}
			kinds = append(kinds, tm.Kind)
		}
		if len(kinds) != 2 || kinds[0] != "Deployment" || kinds[1] != "Acceptance" {
			t.Errorf("%s: Argo CD reads %v, want [Deployment Acceptance]\n%s", pass, kinds, res.Manifests)
		}
	}
}
