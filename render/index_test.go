package render_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/chartindex"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

// index writes an index.yaml of about size bytes: chart web with as many
// versions as fit (each about 230 bytes), 1.2.3 among them.
func index(t *testing.T, size int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n  web:\n")
	for i := 0; b.Len() < size; i++ {
		v := fmt.Sprintf("0.%d.%d", i/1000, i%1000)
		if i == 7 {
			v = "1.2.3"
		}
		fmt.Fprintf(&b, "  - name: web\n    version: %s\n    urls: [charts/web-%s.tgz]\n"+
			"    digest: %064x\n    description: a web server chart, padded to look like a real entry\n", v, v, i)
	}
	p := filepath.Join(t.TempDir(), "index.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLookupIndexInChild: an index.yaml is parsed in the confined render
// child, under its memory cap: a 3 MiB one is found there; a hostile 60 MiB
// one ends the child at its memory budget (exit 4) instead of growing the
// parent (it took 1.2 GB in the parent before); and without a child the
// parent parses only up to InProcessIndexSize.
func TestLookupIndexInChild(t *testing.T) {
	render.UseWorker(testWorker)
	defer render.UseWorker(nil)
	small := index(t, 3<<20)
	big := index(t, render.InProcessIndexSize+1<<20)
	e, err := render.LookupIndex(context.Background(), small, "web", "1.2.3")
	if err != nil || e.Version != "1.2.3" || e.URLs[0] != "charts/web-1.2.3.tgz" {
		t.Fatalf("lookup in the child: %+v, %v", e, err)
	}
	hostile := index(t, 60<<20)
	_, err = render.LookupIndex(context.Background(), hostile, "web", "1.2.3")
	if !errors.Is(err, render.ErrMemoryBudget) || exitcode.Code(err) != exitcode.Invalid || invalidFile(t, err) != "index.yaml of chart web" {
		t.Fatalf("a 60 MiB index: %v (exit %d), want the child's memory budget, exit 4, naming the index", err, exitcode.Code(err))
	}

	render.UseWorker(nil)
	_, err = render.LookupIndex(context.Background(), big, "web", "1.2.3")
	if exitcode.Code(err) != exitcode.Invalid || !errors.Is(err, chartindex.ErrTooLarge) {
		t.Fatalf("in-process lookup above the cap: %v (exit %d)", err, exitcode.Code(err))
	}
}
