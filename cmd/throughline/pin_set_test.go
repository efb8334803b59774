package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
)

const (
	setWeb     = "example.com/shop/web=1.2@sha256:abababababababababababababababababababababababababababababababab"
	setAgent   = "example.com/shop/agent=2.0@sha256:cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"
	setSidecar = "example.com/tools/sidecar=v0.2.0@sha256:efefefefefefefefefefefefefefefefefefefefefefefefefefefefefefefef"
)

// TestPinSet: pin --set writes the given tag@digest into the images: entry
// of the application's own kustomization without a registry. Each case
// copies testdata/pinset/<input>/input, runs pin with the arguments and
// compares the exit code, stdout, stderr, the kustomization afterwards and
// the images it renders with testdata/pinset/golden/<name>.txt
// (THROUGHLINE_UPDATE_GOLDEN=1 rewrites them).
func TestPinSet(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		args        []string
		code        int
	}{
		{"replace-pinned", "replace-pinned", []string{"--set", setWeb}, exitcode.OK},
		{"add-entry", "add-entry", []string{"--set", setWeb}, exitcode.OK},
		{"new-name", "new-name", []string{"--set", setWeb}, exitcode.OK},
		{"add-entry-with-new-name", "add-entry", []string{"--set", "example.com/shop/web=127.0.0.1:5000/web:1.2@sha256:" + strings.Repeat("ab", 32)}, exitcode.OK},
		{"replace-with-new-name", "replace-pinned", []string{"--set", "example.com/shop/web=127.0.0.1:5000/web:1.2@sha256:" + strings.Repeat("ab", 32)}, exitcode.OK},
		{"replace-new-name", "new-name", []string{"--set", "example.com/shop/web=127.0.0.1:5000/web:1.2@sha256:" + strings.Repeat("ab", 32)}, exitcode.OK},
		{"same-new-name", "replace-pinned", []string{"--set", "example.com/shop/web=example.com/shop/web:1.2@sha256:" + strings.Repeat("ab", 32)}, exitcode.OK},
		{"component-json-patch", "component-json-patch", []string{"--set", setSidecar}, exitcode.OK},
		{"unchanged", "unchanged", []string{"--set", "example.com/shop/web=1.1@sha256:3333333333333333333333333333333333333333333333333333333333333333"}, exitcode.OK},
		{"two-sets", "two-sets", []string{"--set", setWeb, "--set", setAgent}, exitcode.OK},
		{"not-used", "not-used", []string{"--set", setSidecar}, exitcode.Invalid},
		{"digest-field", "digest-field", []string{"--set", setWeb}, exitcode.Invalid},
		{"plain-directory", "plain-directory", []string{"--set", setWeb}, exitcode.Invalid},
		{"no-equals", "malformed", []string{"--set", "example.com/shop/web"}, exitcode.Usage},
		{"no-digest", "malformed", []string{"--set", "example.com/shop/web=1.2"}, exitcode.Usage},
		{"no-tag", "malformed", []string{"--set", "example.com/shop/web=@sha256:abababababababababababababababababababababababababababababababab"}, exitcode.Usage},
		{"short-digest", "malformed", []string{"--set", "example.com/shop/web=1.2@sha256:abab"}, exitcode.Usage},
		{"sha512", "malformed", []string{"--set", "example.com/shop/web=1.2@sha512:" + strings.Repeat("ab", 64)}, exitcode.Usage},
		{"uppercase-digest", "malformed", []string{"--set", "example.com/shop/web=1.2@sha256:" + strings.Repeat("AB", 32)}, exitcode.Usage},
		{"name-with-tag", "malformed", []string{"--set", "example.com/shop/web:1.0=1.2@sha256:" + strings.Repeat("ab", 32)}, exitcode.Usage},
		{"bad-new-name", "malformed", []string{"--set", "example.com/shop/web=Example.com/UPPER:1.2@sha256:" + strings.Repeat("ab", 32)}, exitcode.Usage},
		{"bad-tag", "malformed", []string{"--set", "example.com/shop/web=1/2@sha256:" + strings.Repeat("ab", 32)}, exitcode.Usage},
		{"set-twice", "malformed", []string{"--set", setWeb, "--set", setWeb}, exitcode.Usage},
		{"with-check", "malformed", []string{"--check", "--set", setWeb}, exitcode.Usage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", "pinset", tc.input, "input"))); err != nil {
				t.Fatal(err)
			}
			app := filepath.Join(root, "app")
			kfile := filepath.Join(app, "kustomization.yaml")
			before, _ := os.ReadFile(kfile)
			r := runCLI(t, append(append([]string{"pin", "--root", root}, tc.args...), app)...)
			if r.code != tc.code {
				t.Fatalf("pin %v: exit %d, want %d\nstdout: %s\nstderr: %s", tc.args, r.code, tc.code, r.stdout, r.stderr)
			}
			after, _ := os.ReadFile(kfile)
			if tc.code != exitcode.OK && string(after) != string(before) {
				t.Fatalf("a failed pin --set changed the kustomization:\n%s", after)
			}
			var got strings.Builder
			fmt.Fprintf(&got, "# pin %s\nexit %d\n--- stdout\n%s--- stderr\n%s", strings.Join(tc.args, " "), r.code, r.stdout, r.stderr)
			if tc.code == exitcode.OK {
				fmt.Fprintf(&got, "--- app/kustomization.yaml\n%s", after)
				rr := runCLI(t, "render", "--root", root, app)
				if rr.code != exitcode.OK {
					t.Fatalf("render after pin --set: exit %d\n%s", rr.code, rr.stderr)
				}
				fmt.Fprintf(&got, "--- rendered images\n%s", strings.Join(renderedImages.FindAllString(rr.stdout, -1), "\n")+"\n")
				// Setting again changes nothing.
				again := runCLI(t, append(append([]string{"pin", "--root", root}, tc.args...), app)...)
				if again2, _ := os.ReadFile(kfile); again.code != exitcode.OK || string(again2) != string(after) || !strings.Contains(again.stdout, "unchanged") {
					t.Fatalf("second pin --set: exit %d\n%s%s\n%s", again.code, again.stdout, again.stderr, again2)
				}
			}
			golden.Compare(t, "testdata/pinset/golden/"+tc.name+".txt", []byte(got.String()))
		})
	}
}

var renderedImages = regexp.MustCompile(`image: \S+`)
