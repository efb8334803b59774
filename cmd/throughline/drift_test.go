package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
)

// TestDriftCommands is the negative experiment through the CLI: a tag is
// recorded, moved to another build, recorded again; drift check refuses
// with both digests. A single record is checked against the registry now.
func TestDriftCommands(t *testing.T) {
	host := startRegistry(t)
	ref := host + "/shop/checkout:1.4.2"
	dir := t.TempDir()
	staging, production := filepath.Join(dir, "staging.json"), filepath.Join(dir, "production.yaml")

	d1 := pushRandomImage(t, ref)
	r := runCLI(t, "drift", "record", ref, "--out", staging)
	if r.code != exitcode.OK || !strings.Contains(r.stdout, d1) {
		t.Fatalf("record: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	if ok := runCLI(t, "drift", "check", staging); ok.code != exitcode.OK || !strings.HasPrefix(ok.stdout, "OK 1 tags") {
		t.Fatalf("check of an unmoved tag: exit %d %s %s", ok.code, ok.stdout, ok.stderr)
	}

	d2 := pushRandomImage(t, ref) // the tag moves
	if r := runCLI(t, "drift", "record", ref, "--out", production); r.code != exitcode.OK {
		t.Fatalf("record: exit %d %s", r.code, r.stderr)
	}
	if !strings.Contains(readFile(t, production), "digest: "+d2) {
		t.Fatalf("YAML record:\n%s", readFile(t, production))
	}
	want := "REJECTED tag " + ref + " resolved to " + d1 + " and " + d2
	for _, args := range [][]string{
		{"drift", "check", staging, production},
		{"drift", "check", "--offline", production, staging},
		{"drift", "check", staging}, // the registry now disagrees
	} {
		c := runCLI(t, args...)
		if c.code != exitcode.Refused || !strings.Contains(c.stdout, want) || !strings.Contains(c.stderr, want) {
			t.Fatalf("%v: exit %d, want 3 and %q\nstdout: %s\nstderr: %s", args, c.code, want, c.stdout, c.stderr)
		}
	}
	if c := runCLI(t, "drift", "check", "--offline", staging); c.code != exitcode.OK {
		t.Fatalf("offline single record: exit %d %s", c.code, c.stderr)
	}
}

func TestDriftCommandErrors(t *testing.T) {
	host := startRegistry(t)
	ref := host + "/shop/checkout:1.4.2"
	pushRandomImage(t, ref)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if r := runCLI(t, "drift", "record", ref, "--out", good); r.code != exitcode.OK {
		t.Fatalf("record: %s", r.stderr)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(strings.Replace(readFile(t, good), "sha256:", "md5:", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"record without --out", []string{"drift", "record", ref}, exitcode.Usage, "--out"},
		{"record a digest", []string{"drift", "record", ref + "@sha256:" + strings.Repeat("a", 64), "--out", filepath.Join(dir, "x.json")}, exitcode.Usage, "digest"},
		{"record a missing tag", []string{"drift", "record", host + "/shop/checkout:9", "--out", filepath.Join(dir, "y.json")}, exitcode.Invalid, "not found"},
		{"check nothing", []string{"drift", "check"}, exitcode.Usage, "FILE"},
		{"check a missing file", []string{"drift", "check", filepath.Join(dir, "none.json")}, exitcode.Invalid, "none.json"},
		{"check a bad record", []string{"drift", "check", good, bad}, exitcode.Invalid, "bad.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, want %d with %q: %s", r.code, tc.code, tc.want, r.stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "y.json")); !os.IsNotExist(err) {
		t.Fatalf("a failed record wrote a file: %v", err)
	}
}
