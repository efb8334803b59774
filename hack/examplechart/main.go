// Command examplechart packs the example's chart source (examples/charts/storefront)
// reproducibly into the OCI image layout examples/charts/oci: the chart
// package (.tgz: sorted entries, fixed times and owners, no gzip name or
// time), Helm's config (the chart's metadata as JSON) and the OCI manifest
// a registry serves for it. The same source gives the same digests, which
// the example's lock files pin. -check fails when the layout is stale.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	sigyaml "sigs.k8s.io/yaml"
)

// The media types of a Helm chart in an OCI registry (chartsource checks them).
const (
	configMediaType = "application/vnd.cncf.helm.config.v1+json"
	layerMediaType  = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func main() {
	src := flag.String("src", "examples/charts/storefront", "chart source directory")
	out := flag.String("out", "examples/charts/oci", "OCI image layout to write")
	check := flag.Bool("check", false, "fail when the layout differs from what the source gives")
	flag.Parse()
	blobs, index, err := build(*src)
	if err != nil {
		fmt.Fprintln(os.Stderr, "examplechart:", err)
		os.Exit(1)
	}
	files := map[string][]byte{"oci-layout": []byte(`{"imageLayoutVersion":"1.0.0"}` + "\n"), "index.json": index}
	for d, b := range blobs {
		files[path.Join("blobs", "sha256", d[len("sha256:"):])] = b
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(*out, filepath.FromSlash(n))
		if *check {
			if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, files[n]) {
				fmt.Fprintf(os.Stderr, "examplechart: %s is stale: run go run ./hack/examplechart\n", p)
				os.Exit(1)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "examplechart:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(p, files[n], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "examplechart:", err)
			os.Exit(1)
		}
	}
	var idx struct{ Manifests []descriptor }
	_ = json.Unmarshal(index, &idx)
	fmt.Println(idx.Manifests[0].Digest)
}

// build returns the blobs by digest and the layout's index.json.
func build(src string) (map[string][]byte, []byte, error) {
	meta, err := os.ReadFile(filepath.Join(src, "Chart.yaml"))
	if err != nil {
		return nil, nil, err
	}
	var chart struct {
		Name, Version string
	}
	if err := sigyaml.Unmarshal(meta, &chart); err != nil {
		return nil, nil, fmt.Errorf("reading Chart.yaml: %w", err)
	}
	config, err := sigyaml.YAMLToJSON(meta)
	if err != nil {
		return nil, nil, fmt.Errorf("reading Chart.yaml: %w", err)
	}
	tgz, err := pack(src, chart.Name)
	if err != nil {
		return nil, nil, err
	}
	blobs := map[string][]byte{}
	desc := func(mediaType string, data []byte) descriptor {
		sum := sha256.Sum256(data)
		d := "sha256:" + hex.EncodeToString(sum[:])
		blobs[d] = data
		return descriptor{MediaType: mediaType, Digest: d, Size: len(data)}
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": desc(configMediaType, config), "layers": []descriptor{desc(layerMediaType, tgz)},
		"annotations": map[string]string{"org.opencontainers.image.title": chart.Name, "org.opencontainers.image.version": chart.Version},
	})
	if err != nil {
		return nil, nil, err
	}
	m := desc("application/vnd.oci.image.manifest.v1+json", manifest)
	m.Annotations = map[string]string{"org.opencontainers.image.ref.name": chart.Version}
	index, err := json.MarshalIndent(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
		"manifests": []descriptor{m}}, "", "  ")
	return blobs, append(index, '\n'), err
}

// pack makes the chart package: every file of src under name/, in order,
// with fixed metadata, so that the same source gives the same bytes.
func pack(src, name string) ([]byte, error) {
	var files []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(src, p)
		h := &tar.Header{Name: path.Join(name, filepath.ToSlash(rel)), Mode: 0o644, Size: int64(len(data)),
			Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
