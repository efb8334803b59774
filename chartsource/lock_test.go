package chartsource_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

const goodDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func lockText(entry string) string {
	return "apiVersion: throughline.dev/v1alpha1\nkind: ChartLock\ncharts:\n" + entry
}

// TestParseLock: every malformed entry is exit 4 naming the file and field.
func TestParseLock(t *testing.T) {
	t.Parallel()
	const ok = "  - repo: oci://ghcr.io/acme/charts\n    name: web\n    version: \"1.2.3\"\n    digest: " + goodDigest + "\n"
	for _, tc := range []struct {
		name, text, want string
	}{
		{"valid", lockText(ok), ""},
		{"version range", lockText(strings.Replace(ok, `"1.2.3"`, `"^1.2"`, 1)), `charts[0]: field version: version "^1.2" is not one exact`},
		{"tilde range", lockText(strings.Replace(ok, `"1.2.3"`, `~1.2.0`, 1)), "field version"},
		{"two-part version", lockText(strings.Replace(ok, `"1.2.3"`, `"1.2"`, 1)), "field version"},
		{"tag instead of digest", lockText(strings.Replace(ok, goodDigest, "1.2.3", 1)), `field digest: "1.2.3": want sha256:<64 lowercase hex> (a digest, never a tag)`},
		{"digest of the wrong length", lockText(strings.Replace(ok, goodDigest, goodDigest[:70], 1)), "field digest"},
		{"uppercase digest", lockText(strings.Replace(ok, goodDigest, strings.ToUpper(goodDigest), 1)), "field digest"},
		{"sha512 digest", lockText(strings.Replace(ok, "sha256:", "sha512:", 1)), "field digest"},
		{"missing digest", lockText(strings.Replace(ok, "    digest: "+goodDigest+"\n", "", 1)), "field digest: missing"},
		{"unknown field", lockText(ok + "    values: x\n"), `unknown field "values"`},
		{"duplicate key", lockText(ok + "    name: other\n"), "already set"},
		{"twice the same version", lockText(ok + ok), "pinned twice"},
		{"second document", lockText(ok) + "---\nkind: x\n", "one YAML document"},
		{"wrong kind", strings.Replace(lockText(ok), "ChartLock", "Lock", 1), "apiVersion/kind"},
		{"repo with credentials", lockText(strings.Replace(ok, "oci://ghcr.io", "oci://u:p@ghcr.io", 1)), "field repo"},
		{"plain http to a remote host", lockText(strings.Replace(ok, "oci://ghcr.io/acme/charts", "http://charts.example.com", 1)), "field repo"},
		{"empty", "", "is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := chartsource.ParseLock("apps/web/throughline-charts.lock.yaml", []byte(tc.text))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var inv *exitcode.InvalidInput
			if !errors.As(err, &inv) || inv.File != "apps/web/throughline-charts.lock.yaml" || exitcode.Code(err) != exitcode.Invalid {
				t.Fatalf("want exit 4 naming the lock file, got exit %d: %v", exitcode.Code(err), err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not say %q: %v", tc.want, err)
			}
		})
	}
}

// TestSourceRefusals: the render gets nothing for a chart the lock does not
// pin, for a range, or when the lock file leaves the root; none of them asks
// the network (the fetcher here would fail on any request).
func TestSourceRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	offline := fetcher(t.TempDir(), func(o *chartsource.Options) { o.Offline = true })
	pinned := chartsource.Entry{Repo: "oci://ghcr.io/acme/charts", Name: "web", Version: "1.2.3", Digest: goodDigest}
	fsys := repoWithLock(t, "apps/web", pinned)
	src := chartsource.Source{FS: fsys, Fetcher: offline}

	_, err := src.Chart(ctx, "apps/web", chartsource.Ref{Repo: pinned.Repo, Name: "web", Version: "1.2.4"})
	wantRefusal(t, err, chartsource.RuleUnpinnedChart, "apps/web/throughline-charts.lock.yaml", "the lock pins version(s) [1.2.3]")
	_, err = src.Chart(ctx, "apps/other", chartsource.Ref{Repo: pinned.Repo, Name: "web", Version: "1.2.3"})
	wantRefusal(t, err, chartsource.RuleUnpinnedChart, "apps/other/throughline-charts.lock.yaml", "throughline pin apps/other")
	_, err = src.Chart(ctx, "apps/web", chartsource.Ref{Repo: pinned.Repo, Name: "web", Version: "^1.2"})
	wantRefusal(t, err, chartsource.RuleFloatingChartVersion, "^1.2")

	// A lock file that is a symlink out of the root.
	outside := filepath.Join(t.TempDir(), "lock.yaml")
	data, _, err := chartsource.UpdateLock("x", nil, []chartsource.Entry{pinned})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, data, 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "apps/evil"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "apps/evil", chartsource.LockFile)); err != nil {
		t.Fatal(err)
	}
	evilFS, err := render.NewConfinedFS(root, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = chartsource.Source{FS: evilFS, Fetcher: offline}.Chart(ctx, "apps/evil", pinned.Ref())
	if exitcode.Code(err) != exitcode.Invalid || !errors.Is(err, render.ErrOutsideRoot) || strings.Contains(err.Error(), outside) {
		t.Fatalf("a lock file linking out of the root: want exit 4 outside the root (not naming the target), got exit %d: %v",
			exitcode.Code(err), err)
	}
}

// TestUpdateLock: pin writes the lock in place: comments, order and quoting
// stay, a new version replaces the old one's values, a new chart is
// appended to charts.
func TestUpdateLock(t *testing.T) {
	t.Parallel()
	const d2 = "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	in := `# charts of the web app
apiVersion: throughline.dev/v1alpha1
kind: ChartLock
charts:
    # the web chart
    - repo: oci://ghcr.io/acme/charts
      name: web
      version: '1.2.3' # bumped by pin
      digest: ` + goodDigest + `
# trailing comment
`
	out, changes, err := chartsource.UpdateLock("apps/web/l.yaml", []byte(in), []chartsource.Entry{
		{Repo: "oci://ghcr.io/acme/charts", Name: "web", Version: "1.3.0", Digest: d2},
		{Repo: "https://charts.example.com", Name: "redis", Version: "18.0.1", Digest: goodDigest},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `# charts of the web app
apiVersion: throughline.dev/v1alpha1
kind: ChartLock
charts:
    # the web chart
    - repo: oci://ghcr.io/acme/charts
      name: web
      version: '1.3.0' # bumped by pin
      digest: ` + d2 + `
# trailing comment
    - repo: https://charts.example.com
      name: redis
      version: "18.0.1"
      digest: ` + goodDigest + `
`
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	if len(changes) != 2 || !strings.Contains(changes[0], "1.2.3 -> 1.3.0@"+d2) {
		t.Fatalf("changes: %q", changes)
	}
	// Pinning again changes nothing.
	again, changes, err := chartsource.UpdateLock("apps/web/l.yaml", out, []chartsource.Entry{
		{Repo: "oci://ghcr.io/acme/charts", Name: "web", Version: "1.3.0", Digest: d2}})
	if err != nil || len(changes) != 0 || string(again) != string(out) {
		t.Fatalf("re-pin: %v %q", err, changes)
	}
	// An empty list gets its first entry.
	out, _, err = chartsource.UpdateLock("l", []byte("apiVersion: throughline.dev/v1alpha1\nkind: ChartLock\ncharts: []\n"),
		[]chartsource.Entry{{Repo: "oci://ghcr.io/acme/charts", Name: "web", Version: "1.3.0", Digest: d2}})
	if err != nil || !strings.Contains(string(out), "charts:\n  - repo: oci://ghcr.io/acme/charts\n") {
		t.Fatalf("append to an empty list: %v\n%s", err, out)
	}
}

// FuzzParseLock: the parser of an untrusted lock file never panics, and
// what it accepts has only valid entries.
func FuzzParseLock(f *testing.F) {
	f.Add([]byte(lockText("  - repo: oci://ghcr.io/acme/charts\n    name: web\n    version: \"1.2.3\"\n    digest: " + goodDigest + "\n")))
	f.Add([]byte(lockText("  - {repo: 'https://x.example', name: a, version: ^1.2, digest: 1.2.3}\n")))
	f.Add([]byte("charts: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := chartsource.ParseLock("f", data)
		if err != nil {
			if exitcode.Code(err) != exitcode.Invalid {
				t.Fatalf("exit %d: %v", exitcode.Code(err), err)
			}
			return
		}
		for _, e := range l.Charts {
			if !chartsource.ValidDigest(e.Digest) || chartsource.ExactVersion(e.Version) != nil {
				t.Fatalf("accepted %+v", e)
			}
		}
	})
}

// FuzzParseIndex: an index.yaml from a chart repository never panics the
// parser.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nentries:\n  web:\n    - name: web\n      version: 1.2.3\n      urls: [charts/web-1.2.3.tgz]\n      digest: abc\n"))
	f.Add([]byte(`{"apiVersion":"v1","entries":{"a":[{"name":"b"}]}}`))
	f.Fuzz(func(_ *testing.T, data []byte) {
		if idx, err := chartsource.ParseIndex(data); err == nil {
			idx.Find("web", "1.2.3")
		}
	})
}

// FuzzParseRef: a chart reference from the command line.
func FuzzParseRef(f *testing.F) {
	f.Add("oci://ghcr.io/acme/charts/web:1.2.3")
	f.Add("https://charts.example.com/web:^1.2")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := chartsource.ParseRef(s)
		if err == nil && r.Validate() != nil {
			t.Fatalf("accepted %q as %+v", s, r)
		}
	})
}
