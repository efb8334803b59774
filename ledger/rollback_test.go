package ledger

import (
	"errors"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/render"
)

func acc(d string) Accepted {
	return Accepted{Artifact: promotion.Artifact{Digest: "sha256:" + d, Image: "r/web@sha256:" + d}}
}

func TestPick(t *testing.T) {
	t.Parallel()
	a, b, c := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)
	hist := &Log{Accepted: []Accepted{acc(c), acc(b), acc(a)}} // newest first
	if p, err := Pick(hist, Previous, "sha256:"+c, "prod"); err != nil || p.Artifact.Digest != "sha256:"+b {
		t.Fatalf("previous: %v %v", p, err)
	}
	if p, err := Pick(hist, a[:12], "sha256:"+c, "prod"); err != nil || p.Artifact.Digest != "sha256:"+a {
		t.Fatalf("prefix: %v %v", p, err)
	}
	var re *exitcode.Refusal
	for name, tc := range map[string]struct{ to, cur string }{
		"never accepted": {"sha256:" + strings.Repeat("d", 64), "sha256:" + c},
		"current":        {"sha256:" + c, "sha256:" + c},
		"too short":      {"abc", "sha256:" + c},
	} {
		if _, err := Pick(hist, tc.to, tc.cur, "prod"); !errors.As(err, &re) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Pick(&Log{Accepted: []Accepted{acc(c)}}, Previous, "sha256:"+c, "prod"); !errors.As(err, &re) {
		t.Errorf("nothing before: %v", err)
	}
}

func TestIrreversible(t *testing.T) {
	t.Parallel()
	d := "sha256:" + strings.Repeat("a", 64)
	obj := func(annotated bool, digest string) render.Object {
		tmpl := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "r/web@" + digest}}}}
		if annotated {
			tmpl["metadata"] = map[string]any{"annotations": map[string]any{AnnotationIrreversible: "true"}}
		}
		return render.Object{Map: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
			"spec": map[string]any{"template": tmpl}}}
	}
	if got := Irreversible([]render.Object{obj(true, d)}, d); len(got) != 1 {
		t.Fatalf("annotated template: %v", got)
	}
	if got := Irreversible([]render.Object{obj(false, d)}, d); len(got) != 0 {
		t.Fatalf("not annotated: %v", got)
	}
	if got := Irreversible([]render.Object{obj(true, "sha256:"+strings.Repeat("b", 64))}, d); len(got) != 0 {
		t.Fatalf("another artifact: %v", got)
	}
}
