package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
		{"replace-pinned", "replace-pinned", []string{"--set", setWeb}, exitOK},
		{"add-entry", "add-entry", []string{"--set", setWeb}, exitOK},
		{"new-name", "new-name", []string{"--set", setWeb}, exitOK},
		{"add-entry-with-new-name", "add-entry", []string{"--set", "example.com/shop/web=127.0.0.1:5000/web:1.2@sha256:" + strings.Repeat("ab", 32)}, exitOK},
		{"replace-with-new-name", "replace-pinned", []string{"--set", "example.com/shop/web=127.0.0.1:5000/web:1.2@sha256:" + strings.Repeat("ab", 32)}, exitOK},
		{"replace-new-name", "new-name", []string{"--set", "example.com/shop/web=127.0.0.1:5000/web:1.2@sha256:" + strings.Repeat("ab", 32)}, exitOK},
		{"same-new-name", "replace-pinned", []string{"--set", "example.com/shop/web=example.com/shop/web:1.2@sha256:" + strings.Repeat("ab", 32)}, exitOK},
		{"component-json-patch", "component-json-patch", []string{"--set", setSidecar}, exitOK},
		{"unchanged", "unchanged", []string{"--set", "example.com/shop/web=1.1@sha256:3333333333333333333333333333333333333333333333333333333333333333"}, exitOK},
		{"two-sets", "two-sets", []string{"--set", setWeb, "--set", setAgent}, exitOK},
		{"not-used", "not-used", []string{"--set", setSidecar}, exitInvalid},
		{"digest-field", "digest-field", []string{"--set", setWeb}, exitInvalid},
		{"plain-directory", "plain-directory", []string{"--set", setWeb}, exitInvalid},
		{"no-equals", "malformed", []string{"--set", "example.com/shop/web"}, exitUsage},
		{"no-digest", "malformed", []string{"--set", "example.com/shop/web=1.2"}, exitUsage},
		{"no-tag", "malformed", []string{"--set", "example.com/shop/web=@sha256:abababababababababababababababababababababababababababababababab"}, exitUsage},
		{"short-digest", "malformed", []string{"--set", "example.com/shop/web=1.2@sha256:abab"}, exitUsage},
		{"sha512", "malformed", []string{"--set", "example.com/shop/web=1.2@sha512:" + strings.Repeat("ab", 64)}, exitUsage},
		{"uppercase-digest", "malformed", []string{"--set", "example.com/shop/web=1.2@sha256:" + strings.Repeat("AB", 32)}, exitUsage},
		{"name-with-tag", "malformed", []string{"--set", "example.com/shop/web:1.0=1.2@sha256:" + strings.Repeat("ab", 32)}, exitUsage},
		{"bad-new-name", "malformed", []string{"--set", "example.com/shop/web=Example.com/UPPER:1.2@sha256:" + strings.Repeat("ab", 32)}, exitUsage},
		{"bad-tag", "malformed", []string{"--set", "example.com/shop/web=1/2@sha256:" + strings.Repeat("ab", 32)}, exitUsage},
		{"set-twice", "malformed", []string{"--set", setWeb, "--set", setWeb}, exitUsage},
		{"with-check", "malformed", []string{"--check", "--set", setWeb}, exitUsage},
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
			if tc.code != exitOK && string(after) != string(before) {
				t.Fatalf("a failed pin --set changed the kustomization:\n%s", after)
			}
			var got strings.Builder
			fmt.Fprintf(&got, "# pin %s\nexit %d\n--- stdout\n%s--- stderr\n%s", strings.Join(tc.args, " "), r.code, r.stdout, r.stderr)
			if tc.code == exitOK {
				fmt.Fprintf(&got, "--- app/kustomization.yaml\n%s", after)
				rr := runCLI(t, "render", "--root", root, app)
				if rr.code != exitOK {
					t.Fatalf("render after pin --set: exit %d\n%s", rr.code, rr.stderr)
				}
				fmt.Fprintf(&got, "--- rendered images\n%s", strings.Join(renderedImages.FindAllString(rr.stdout, -1), "\n")+"\n")
				// Setting again changes nothing.
				again := runCLI(t, append(append([]string{"pin", "--root", root}, tc.args...), app)...)
				if again2, _ := os.ReadFile(kfile); again.code != exitOK || string(again2) != string(after) || !strings.Contains(again.stdout, "unchanged") {
					t.Fatalf("second pin --set: exit %d\n%s%s\n%s", again.code, again.stdout, again.stderr, again2)
				}
			}
			golden := filepath.Join("testdata", "pinset", "golden", tc.name+".txt")
			if os.Getenv("THROUGHLINE_UPDATE_GOLDEN") != "" {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (THROUGHLINE_UPDATE_GOLDEN=1 writes it)", err)
			}
			if got.String() != string(want) {
				t.Fatalf("pin --set differs from %s (THROUGHLINE_UPDATE_GOLDEN=1 rewrites it):\ngot:\n%s\nwant:\n%s", golden, got.String(), want)
			}
		})
	}
}

var renderedImages = regexp.MustCompile(`image: \S+`)
