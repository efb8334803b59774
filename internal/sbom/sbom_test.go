package sbom

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"
)

// The test binary itself carries Go build info.
func TestFromBinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	img := Image{Name: "throughline", Digest: "sha256:" + string(bytes.Repeat([]byte("a"), 64)), Version: "v0.1.0", Created: time.Unix(1764000000, 0)}
	a, err := FromBinary(img, bin)
	if err != nil {
		t.Fatal(err)
	}
	b, err := FromBinary(img, bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two SBOMs of the same binary differ")
	}
	var doc struct {
		BOMFormat   string `json:"bomFormat"`
		SpecVersion string `json:"specVersion"`
		Metadata    struct {
			Component struct {
				Purl string `json:"purl"`
			} `json:"component"`
		} `json:"metadata"`
		Components []struct {
			Purl string `json:"purl"`
		} `json:"components"`
	}
	if err := json.Unmarshal(a, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.BOMFormat != "CycloneDX" || doc.SpecVersion != "1.6" {
		t.Fatalf("format %q %q", doc.BOMFormat, doc.SpecVersion)
	}
	if doc.Metadata.Component.Purl != "pkg:oci/throughline@"+img.Digest {
		t.Fatalf("image purl %q", doc.Metadata.Component.Purl)
	}
	found := false
	for _, c := range doc.Components {
		// A test binary records the toolchain but not always its modules;
		// hack/image runs this on the release binary.
		if len(c.Purl) > len("pkg:golang/stdlib@") && c.Purl[:len("pkg:golang/stdlib@")] == "pkg:golang/stdlib@" {
			found = true
		}
	}
	if !found {
		t.Fatalf("stdlib missing from %d components", len(doc.Components))
	}
	if _, err := FromBinary(img, []byte("not a binary")); err == nil {
		t.Fatal("no error for a non-Go file")
	}
}
