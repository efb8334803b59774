// Package ociimage assembles throughline's release image without a container
// engine: an OCI image index of one image per platform, each a scratch base
// (CA certificates, an /etc/passwd entry for uid 999, no shell) plus the
// throughline binary and the Argo CD plugin.yaml.
//
// Assembly is reproducible: every timestamp is Spec.Created, tar entries are
// written in sorted order with fixed modes and owners, and layers are gzipped
// without header metadata, so the same inputs always give the same digest.
package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Paths and identity inside the image.
const (
	BinaryPath     = "/usr/local/bin/throughline"
	PluginPath     = "/home/argocd/cmp-server/config/plugin.yaml"
	CACertsPath    = "/etc/ssl/certs/ca-certificates.crt"
	UID            = 999
	HomeDir        = "/home/argocd"
	userName       = "argocd"
	LabelSource    = "org.opencontainers.image.source"
	LabelRevision  = "org.opencontainers.image.revision"
	LabelVersion   = "org.opencontainers.image.version"
	LabelCreated   = "org.opencontainers.image.created"
	LabelRefName   = "org.opencontainers.image.ref.name"
	defaultPathEnv = "PATH=/usr/local/bin"
)

// PluginBinaryPath is throughline-cmp, the thin client of the resident
// renderer that plugin.yaml runs (on the image's PATH, next to BinaryPath);
// RenderBinaryPath is throughline-cmp-render, the in-process renderer it
// executes beside itself when the resident renderer gives no render.
const (
	PluginBinaryPath = "/usr/local/bin/throughline-cmp"
	RenderBinaryPath = "/usr/local/bin/throughline-cmp-render"
)

// Spec is everything that goes into the image. Two equal Specs give the same
// index digest.
type Spec struct {
	// Binaries maps an architecture (amd64, arm64) to the linux binary built
	// for it. The OS is always linux.
	Binaries map[string][]byte
	// PluginBinaries maps the same architectures to throughline-cmp, the
	// plugin binary (PluginBinaryPath), and RenderBinaries to
	// throughline-cmp-render, its in-process renderer (RenderBinaryPath).
	PluginBinaries map[string][]byte
	RenderBinaries map[string][]byte
	// PluginYAML is the Argo CD ConfigManagementPlugin manifest.
	PluginYAML []byte
	// CACerts is the PEM bundle written at CACertsPath.
	CACerts []byte
	// Created is the one timestamp used everywhere (SOURCE_DATE_EPOCH).
	Created time.Time
	// Source, Revision and Version fill the OCI labels.
	Source, Revision, Version string
}

func (s Spec) validate() error {
	if len(s.Binaries) == 0 {
		return errors.New("ociimage: no binaries")
	}
	for arch, b := range s.Binaries {
		if len(b) == 0 {
			return fmt.Errorf("ociimage: empty binary for %s", arch)
		}
		if len(s.PluginBinaries[arch]) == 0 {
			return fmt.Errorf("ociimage: no throughline-cmp binary for %s (plugin.yaml runs it)", arch)
		}
		if len(s.RenderBinaries[arch]) == 0 {
			return fmt.Errorf("ociimage: no throughline-cmp-render binary for %s (throughline-cmp renders with it without the resident renderer)", arch)
		}
	}
	for arch := range s.PluginBinaries {
		if _, ok := s.Binaries[arch]; !ok {
			return fmt.Errorf("ociimage: a throughline-cmp binary for %s but no throughline binary", arch)
		}
	}
	for arch := range s.RenderBinaries {
		if _, ok := s.Binaries[arch]; !ok {
			return fmt.Errorf("ociimage: a throughline-cmp-render binary for %s but no throughline binary", arch)
		}
	}
	if len(s.PluginYAML) == 0 {
		return errors.New("ociimage: empty plugin.yaml")
	}
	if len(s.CACerts) == 0 {
		return errors.New("ociimage: empty CA certificates")
	}
	return nil
}

// Labels returns the OCI labels recorded in every image config and on the index.
func (s Spec) Labels() map[string]string {
	l := map[string]string{LabelCreated: s.Created.UTC().Format(time.RFC3339)}
	if s.Source != "" {
		l[LabelSource] = s.Source
	}
	if s.Revision != "" {
		l[LabelRevision] = s.Revision
	}
	if s.Version != "" {
		l[LabelVersion] = s.Version
	}
	return l
}

// Build assembles the image index. It does no I/O.
func Build(spec Spec) (v1.ImageIndex, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	base, err := layerFromFiles(baseFiles(spec), spec.Created)
	if err != nil {
		return nil, fmt.Errorf("ociimage: base layer: %w", err)
	}
	arches := make([]string, 0, len(spec.Binaries))
	for a := range spec.Binaries {
		arches = append(arches, a)
	}
	sort.Strings(arches)

	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range arches {
		img, err := buildImage(spec, base, arch)
		if err != nil {
			return nil, fmt.Errorf("ociimage: %s: %w", arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{
				MediaType: types.OCIManifestSchema1,
				Platform:  &v1.Platform{OS: "linux", Architecture: arch},
			},
		})
	}
	anns := spec.Labels()
	out, ok := mutate.Annotations(idx, anns).(v1.ImageIndex)
	if !ok {
		return nil, errors.New("ociimage: annotating the index")
	}
	return out, nil
}

func buildImage(spec Spec, base v1.Layer, arch string) (v1.Image, error) {
	app, err := layerFromFiles([]file{
		{path: BinaryPath, mode: 0o755, data: spec.Binaries[arch]},
		{path: PluginBinaryPath, mode: 0o755, data: spec.PluginBinaries[arch]},
		{path: RenderBinaryPath, mode: 0o755, data: spec.RenderBinaries[arch]},
		{path: PluginPath, mode: 0o444, data: spec.PluginYAML},
	}, spec.Created)
	if err != nil {
		return nil, fmt.Errorf("app layer: %w", err)
	}
	created := v1.Time{Time: spec.Created.UTC()}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer,
			History: v1.History{Created: created, CreatedBy: "throughline ociimage: base (ca-certificates, passwd)"}},
		mutate.Addendum{Layer: app, MediaType: types.OCILayer,
			History: v1.History{Created: created,
				CreatedBy: "throughline ociimage: throughline, throughline-cmp and throughline-cmp-render binaries, plugin.yaml"}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = arch
	cf.Created = created
	cf.Author = ""
	cf.Config.User = fmt.Sprintf("%d:%d", UID, UID)
	cf.Config.Entrypoint = []string{BinaryPath}
	cf.Config.Cmd = nil
	cf.Config.WorkingDir = HomeDir
	cf.Config.Env = []string{defaultPathEnv, "HOME=" + HomeDir, "SSL_CERT_FILE=" + CACertsPath}
	cf.Config.Labels = spec.Labels()
	return mutate.ConfigFile(img, cf)
}

type file struct {
	path string
	mode int64
	data []byte
	dir  bool
}

func baseFiles(spec Spec) []file {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n"+
		"%s:x:%d:%d:%s:%s:/sbin/nologin\n"+
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n", userName, UID, UID, userName, HomeDir)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\nnobody:x:65534:\n", userName, UID)
	return []file{
		{path: "/etc/passwd", mode: 0o644, data: []byte(passwd)},
		{path: "/etc/group", mode: 0o644, data: []byte(group)},
		{path: CACertsPath, mode: 0o644, data: spec.CACerts},
		{path: "/tmp", mode: 0o1777, dir: true},
	}
}

// layerFromFiles writes a tar of files (and their parent directories) in
// sorted order with fixed metadata and returns a gzip layer over it.
func layerFromFiles(files []file, created time.Time) (v1.Layer, error) {
	entries := map[string]file{}
	for _, f := range files {
		p := strings.TrimPrefix(path.Clean(f.path), "/")
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			if _, ok := entries[d]; !ok {
				entries[d] = file{path: d, mode: 0o755, dir: true}
			}
		}
		f.path = p
		entries[p] = f
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mt := created.UTC()
	for _, n := range names {
		f := entries[n]
		h := &tar.Header{
			Name:    f.path,
			Mode:    f.mode,
			ModTime: mt,
			Format:  tar.FormatPAX,
		}
		if f.dir {
			h.Typeflag = tar.TypeDir
			h.Name += "/"
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.data))
		}
		// Home is owned by the runtime user; everything else by root.
		if f.path == strings.TrimPrefix(HomeDir, "/") {
			h.Uid, h.Gid = UID, UID
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if !f.dir {
			if _, err := tw.Write(f.data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	// gzip.Header is left zero: no name, no mtime, OS "unknown".
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	compressed := gz.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// WriteLayout writes idx into an OCI image layout at dir (replacing one that
// is there), tagged with refName in index.json. It writes into a sibling
// temporary directory and renames it into place.
func WriteLayout(ctx context.Context, dir string, idx v1.ImageIndex, refName string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	parent := path.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("ociimage: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, ".image-*")
	if err != nil {
		return fmt.Errorf("ociimage: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }() // gone after the rename; on failure, best effort
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return fmt.Errorf("ociimage: layout: %w", err)
	}
	var opts []layout.Option
	if refName != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{LabelRefName: refName}))
	}
	if err := p.AppendIndex(idx, opts...); err != nil {
		return fmt.Errorf("ociimage: layout: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("ociimage: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("ociimage: %w", err)
	}
	return nil
}

// Push writes idx to ref (repo:tag or repo). Plain HTTP is used only when the
// registry host is loopback. It returns the pushed reference by digest.
func Push(ctx context.Context, ref string, idx v1.ImageIndex) (string, error) {
	var nopts []name.Option
	if isLoopback(ref) {
		nopts = append(nopts, name.Insecure)
	}
	r, err := name.ParseReference(ref, nopts...)
	if err != nil {
		return "", fmt.Errorf("ociimage: %w", err)
	}
	if err := remote.WriteIndex(r, idx, remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("ociimage: push %s: %w", r, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return "", fmt.Errorf("ociimage: %w", err)
	}
	return r.Context().Digest(d.String()).String(), nil
}

func isLoopback(ref string) bool {
	host, _, _ := strings.Cut(ref, "/")
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
