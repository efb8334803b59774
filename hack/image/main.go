// Command image assembles throughline's release image index from binaries
// already built for each platform (see `make image`), writes it as an OCI
// layout and, when -repo is set, pushes it. It prints the index digest.
//
//	go run ./hack/image -bin linux/amd64=bin/linux_amd64/throughline \
//	    -plugin-bin linux/amd64=bin/linux_amd64/throughline-cmp \
//	    -render-bin linux/amd64=bin/linux_amd64/throughline-cmp-render \
//	    -bin linux/arm64=bin/linux_arm64/throughline \
//	    -plugin-bin linux/arm64=bin/linux_arm64/throughline-cmp \
//	    -render-bin linux/arm64=bin/linux_arm64/throughline-cmp-render -out bin/image
//
// `image sign -key KEY` signs the index and attests its SBOM (sign.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/throughline-dev/throughline/atomicfile"
	"github.com/throughline-dev/throughline/internal/ociimage"
	"github.com/throughline-dev/throughline/internal/sbom"
)

type binFlags map[string]string

func (b binFlags) String() string { return fmt.Sprint(map[string]string(b)) }
func (b binFlags) Set(v string) error {
	plat, p, ok := strings.Cut(v, "=")
	arch, found := strings.CutPrefix(plat, "linux/")
	if !ok || !found || arch == "" || p == "" {
		return fmt.Errorf("want linux/<arch>=<path>, got %q", v)
	}
	b[arch] = p
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	do := run
	if len(os.Args) > 1 && os.Args[1] == "sign" {
		do, os.Args = runSign, os.Args[1:]
	}
	if err := do(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	bins := binFlags{}
	fs.Var(bins, "bin", "linux/<arch>=<path of the binary>; repeat per platform")
	pluginBins := binFlags{}
	fs.Var(pluginBins, "plugin-bin", "linux/<arch>=<path of throughline-cmp>; one per -bin platform")
	renderBins := binFlags{}
	fs.Var(renderBins, "render-bin", "linux/<arch>=<path of throughline-cmp-render>; one per -bin platform")
	out := fs.String("out", "bin/image", "OCI layout directory to write")
	plugin := fs.String("plugin", "plugin.yaml", "Argo CD plugin manifest")
	cacerts := fs.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "PEM CA bundle to ship")
	epoch := fs.String("epoch", os.Getenv("SOURCE_DATE_EPOCH"), "creation time, seconds since the epoch (SOURCE_DATE_EPOCH)")
	source := fs.String("source", "https://github.com/throughline-dev/throughline", "org.opencontainers.image.source")
	revision := fs.String("revision", "", "org.opencontainers.image.revision (the commit)")
	version := fs.String("version", "", "org.opencontainers.image.version")
	repo := fs.String("repo", os.Getenv("IMAGE_REPO"), "push to this repository (IMAGE_REPO); plain HTTP only for loopback")
	digestFile := fs.String("digest-file", "", "also write the pushed or built reference by digest here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(bins) == 0 {
		return errors.New("no -bin given")
	}
	if *epoch == "" {
		return errors.New("no -epoch and no SOURCE_DATE_EPOCH: the image would not be reproducible")
	}
	secs, err := strconv.ParseInt(*epoch, 10, 64)
	if err != nil {
		return fmt.Errorf("epoch: %w", err)
	}
	spec := ociimage.Spec{
		Binaries:       map[string][]byte{},
		PluginBinaries: map[string][]byte{},
		RenderBinaries: map[string][]byte{},
		Created:        time.Unix(secs, 0).UTC(),
		Source:         *source, Revision: *revision, Version: *version,
	}
	for arch, p := range bins {
		if spec.Binaries[arch], err = os.ReadFile(p); err != nil {
			return err
		}
	}
	for arch, p := range pluginBins {
		if spec.PluginBinaries[arch], err = os.ReadFile(p); err != nil {
			return err
		}
	}
	for arch, p := range renderBins {
		if spec.RenderBinaries[arch], err = os.ReadFile(p); err != nil {
			return err
		}
	}
	if spec.PluginYAML, err = os.ReadFile(*plugin); err != nil {
		return err
	}
	if spec.CACerts, err = os.ReadFile(*cacerts); err != nil {
		return err
	}
	idx, err := ociimage.Build(spec)
	if err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	if err := ociimage.WriteLayout(ctx, *out, idx, *version); err != nil {
		return err
	}
	// The SBOM comes from the first platform's binary: the module list is the
	// same for every platform of one build.
	first := ""
	for arch := range spec.Binaries {
		if first == "" || arch < first {
			first = arch
		}
	}
	doc, err := sbom.FromBinary(sbom.Image{Name: "throughline", Digest: d.String(), Version: *version, Created: spec.Created}, spec.Binaries[first])
	if err != nil {
		return err
	}
	sbomPath := filepath.Join(*out, "sbom-"+strings.TrimPrefix(d.String(), "sha256:")+".cdx.json")
	if err := atomicfile.Write(sbomPath, doc, 0o644); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "sbom:", sbomPath)
	ref := "throughline@" + d.String()
	if *repo != "" {
		// IMAGE_REPO without a tag is pushed as VERSION, not latest.
		if r := *repo; !strings.Contains(r[strings.LastIndex(r, "/")+1:], ":") && *version != "" {
			*repo = r + ":" + *version
		}
		if ref, err = ociimage.Push(ctx, *repo, idx); err != nil {
			return err
		}
	}
	if *digestFile != "" {
		if err := atomicfile.Write(*digestFile, []byte(ref+"\n"), 0o644); err != nil {
			return err
		}
	}
	fmt.Println(ref)
	return nil
}
