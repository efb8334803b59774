package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestLayoutIsFresh: the committed OCI layout is what the committed chart
// source packs to, byte for byte (the example's lock files pin its
// manifest digest): edit the source, run go run ./hack/examplechart and
// update the lock files.
func TestLayoutIsFresh(t *testing.T) {
	blobs, index, err := build("../../examples/charts/storefront")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../examples/charts/oci/index.json")
	if err != nil || !bytes.Equal(got, index) {
		t.Fatalf("examples/charts/oci/index.json is stale (%v): run go run ./hack/examplechart", err)
	}
	for d, want := range blobs {
		got, err := os.ReadFile(filepath.Join("../../examples/charts/oci/blobs/sha256", d[len("sha256:"):]))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("blob %s is stale (%v): run go run ./hack/examplechart", d, err)
		}
	}
	again, _, err := build("../../examples/charts/storefront")
	if err != nil || len(again) != len(blobs) {
		t.Fatalf("a second build differs: %v", err)
	}
	for d := range blobs {
		if _, ok := again[d]; !ok {
			t.Errorf("the package is not reproducible: %s", d)
		}
	}
}
