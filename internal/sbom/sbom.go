// Package sbom writes a CycloneDX JSON software bill of materials for
// throughline's release image from the Go build info embedded in its binary.
package sbom

import (
	"bytes"
	"debug/buildinfo"
	"fmt"
	"sort"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// Image describes the image the SBOM is about.
type Image struct {
	Name    string // e.g. throughline
	Digest  string // sha256:... of the image index
	Version string
	Created time.Time
}

// FromBinary returns a CycloneDX 1.6 JSON document listing the Go toolchain,
// the main module and every dependency module recorded in binary. The output
// depends only on its inputs (no random serial number, no wall clock).
func FromBinary(img Image, binary []byte) ([]byte, error) {
	bi, err := buildinfo.Read(bytes.NewReader(binary))
	if err != nil {
		return nil, fmt.Errorf("sbom: build info: %w", err)
	}
	imageRef := "pkg:oci/" + img.Name + "@" + img.Digest
	bom := cdx.NewBOM()
	bom.Metadata = &cdx.Metadata{
		Timestamp: img.Created.UTC().Format(time.RFC3339),
		Component: &cdx.Component{
			BOMRef:     imageRef,
			Type:       cdx.ComponentTypeContainer,
			Name:       img.Name,
			Version:    img.Version,
			PackageURL: imageRef,
			Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: trimAlgo(img.Digest)}},
		},
	}
	main := goComponent(bi.Main.Path, bi.Main.Version, cdx.ComponentTypeApplication)
	comps := []cdx.Component{
		{
			BOMRef: "pkg:golang/stdlib@" + bi.GoVersion, Type: cdx.ComponentTypeLibrary,
			Name: "stdlib", Version: bi.GoVersion, PackageURL: "pkg:golang/stdlib@" + bi.GoVersion,
		},
		main,
	}
	var deps []string
	for _, d := range bi.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		c := goComponent(m.Path, m.Version, cdx.ComponentTypeLibrary)
		if m.Sum != "" {
			c.Properties = &[]cdx.Property{{Name: "go:module:sum", Value: m.Sum}}
		}
		comps = append(comps, c)
		deps = append(deps, c.BOMRef)
	}
	sort.Slice(comps[2:], func(i, j int) bool { return comps[2+i].BOMRef < comps[2+j].BOMRef })
	sort.Strings(deps)
	bom.Components = &comps
	bom.Dependencies = &[]cdx.Dependency{
		{Ref: imageRef, Dependencies: &[]string{main.BOMRef}},
		{Ref: main.BOMRef, Dependencies: &deps},
	}
	var buf bytes.Buffer
	enc := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(true)
	if err := enc.EncodeVersion(bom, cdx.SpecVersion1_6); err != nil {
		return nil, fmt.Errorf("sbom: encode: %w", err)
	}
	return buf.Bytes(), nil
}

func goComponent(path, version string, typ cdx.ComponentType) cdx.Component {
	if version == "" || version == "(devel)" {
		version = "devel"
	}
	purl := "pkg:golang/" + path + "@" + version
	return cdx.Component{BOMRef: purl, Type: typ, Name: path, Version: version, PackageURL: purl}
}

func trimAlgo(d string) string {
	if len(d) > 7 && d[:7] == "sha256:" {
		return d[7:]
	}
	return d
}
