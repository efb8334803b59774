package main

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
)

func TestResolveCommand(t *testing.T) {
	host := startRegistry(t)
	ref := host + "/shop/checkout:1.4.2"
	idx, children := pushMultiArch(t, ref)
	single := pushRandomImage(t, host+"/shop/agent:2.0")

	r := runCLI(t, "resolve", "-o", "json", ref, host+"/shop/agent:2.0")
	if r.code != exitcode.OK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var ds []struct {
		Reference, Digest, MediaType, ConfigDigest string
		Children                                   []struct {
			Platform     struct{ OS, Architecture, Variant string }
			Digest       string
			ConfigDigest string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &ds); err != nil {
		t.Fatalf("-o json: %v\n%s", err, r.stdout)
	}
	if len(ds) != 2 || ds[0].Digest != idx || ds[0].MediaType != "application/vnd.oci.image.index.v1+json" || len(ds[0].Children) != 2 {
		t.Fatalf("resolve = %+v", ds)
	}
	for i, ch := range ds[0].Children {
		if ch.Digest != children[i] || !strings.HasPrefix(ch.ConfigDigest, "sha256:") {
			t.Errorf("child %d = %+v, want %s", i, ch, children[i])
		}
	}
	if ds[0].Children[1].Platform.Architecture != "arm64" || ds[0].Children[1].Platform.Variant != "v8" {
		t.Errorf("child 1 platform = %+v", ds[0].Children[1].Platform)
	}
	if ds[1].Digest != single || !strings.HasPrefix(ds[1].ConfigDigest, "sha256:") {
		t.Fatalf("single = %+v, want %s", ds[1], single)
	}

	tbl := runCLI(t, "resolve", ref)
	if tbl.code != exitcode.OK {
		t.Fatalf("exit %d: %s", tbl.code, tbl.stderr)
	}
	for _, want := range []string{"IMAGE", "index (2)", idx, "linux/amd64", "linux/arm64/v8", children[0], children[1]} {
		if !strings.Contains(tbl.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, tbl.stdout)
		}
	}
}

func TestResolveCommandErrors(t *testing.T) {
	host := startRegistry(t)
	pushRandomImage(t, host+"/shop/agent:2.0")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	if err := ln.Close(); err != nil { // nothing listens there now: connection refused
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no image", []string{"resolve"}, exitcode.Usage, "at least one IMAGE"},
		{"bad output", []string{"resolve", "-o", "xml", host + "/shop/agent:2.0"}, exitcode.Usage, "table or json"},
		{"bad reference", []string{"resolve", "Shop/Agent:2.0"}, exitcode.Invalid, "Shop/Agent:2.0"},
		{"tag not found", []string{"resolve", host + "/shop/agent:9.9"}, exitcode.Invalid, "shop/agent:9.9"},
		{"digest not found", []string{"resolve", host + "/shop/agent@sha256:" + strings.Repeat("0", 64)}, exitcode.Invalid, "not found"},
		// Unreachable is "not decided": exit 5, try again.
		{"unreachable", []string{"resolve", "--registry-timeout", "2s", closed + "/app:v1"}, exitcode.Pending, "registry unreachable"},
		{"one of two fails", []string{"resolve", host + "/shop/agent:2.0", host + "/shop/agent:9.9"}, exitcode.Invalid, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d: %s", r.code, tc.code, r.stderr)
			}
			if !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("stderr lacks %q: %s", tc.want, r.stderr)
			}
		})
	}
}

func TestResolveCommandUnauthorized(t *testing.T) {
	host := startFaultyRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"no"}]}`, http.StatusUnauthorized)
		})
	})
	r := runCLI(t, "resolve", host+"/private/app:v1")
	if r.code != exitcode.Internal || !strings.Contains(r.stderr, "unauthorized") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}
