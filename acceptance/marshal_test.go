package acceptance_test

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/render"
)

// TestAcceptanceBytes holds the Acceptance that cmp generate (JSON) and
// render (YAML) print to the bytes written before the types moved to
// api/v1alpha1: testdata/dev-acceptance.{json,yaml} were produced by the
// acceptance package of commit 795f821 from the same overlay, less the
// spec.sourceRevision that a render no longer writes (the output is a pure
// function of the rendered content; the controller reports the revision).
func TestAcceptanceBytes(t *testing.T) {
	t.Parallel()
	d, err := acceptance.Declare(context.Background(), acceptance.Request{
		Render: render.Options{Root: "../examples/gitops-env", Path: "apps/checkout/overlays/dev"},
		// The registry's environment of the path, as render gives it.
		Environment:   "dev",
		SourceRepoURL: "https://git.example.test/gitops-env.git",
		Renderer:      "v0.0.0-golden",
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := acceptance.Marshal(&d.Acceptance)
	if err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "testdata/dev-acceptance.json", append(raw, '\n'))

	o, err := acceptance.ToObject(&d.Acceptance)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := render.EncodeYAML(&b, []render.Object{o}); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "testdata/dev-acceptance.yaml", b.Bytes())

	if !acceptance.IsAcceptance(o) {
		t.Errorf("IsAcceptance(%s) = false", o.ID())
	}
	back, err := acceptance.FromObject(o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, d.Acceptance) {
		t.Errorf("FromObject(ToObject(a)) = %+v, want %+v", back, d.Acceptance)
	}
}
