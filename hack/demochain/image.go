package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha1"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/throughline-dev/throughline/trust"
	"github.com/throughline-dev/throughline/trust/signing"
)

// The example's trust policy (staging and production) asks for these:
// the builder and the source repository of the SLSA provenance.
const (
	builderID  = "https://github.com/actions/runner/github-hosted"
	sourceRepo = "https://github.com/example/checkout"
	// exampleImage is the image the example's overlays pin.
	exampleImage = "ghcr.io/throughline-dev/checkout"
	imagePath    = "throughline-dev/checkout"
)

// startRegistry serves go-containerregistry's in-memory registry on a
// loopback port (plain HTTP: the CLI allows it for loopback registries
// only). It returns host:port and a stop function.
func startRegistry() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("registry: %w", err)
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// release is one version of checkout in the demo registry.
type release struct {
	Version string
	Ref     name.Digest // host/throughline-dev/checkout@sha256:...
	// SourceCommit is the (made-up, stable) commit of
	// github.com/example/checkout the version is built from.
	SourceCommit string
}

// Image is the reference CI hands on: repository:tag@digest.
func (r release) Image() string {
	return r.Ref.Context().String() + ":" + r.Version + "@" + r.Ref.DigestStr()
}

// Digest is sha256:<hex>.
func (r release) Digest() string { return r.Ref.DigestStr() }

// platforms of every index the demo pushes.
var platforms = []string{"amd64", "arm64"}

// pushRelease builds the image index of version (linux/amd64 and
// linux/arm64, one small layer each) from fixed bytes and times, so that
// its digest is the same at every run, and pushes it as
// host/throughline-dev/checkout:version.
func pushRelease(ctx context.Context, host, version string) (release, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range platforms {
		img, err := platformImage(version, arch)
		if err != nil {
			return release{}, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	tag, err := name.NewTag(host + "/" + imagePath + ":" + version)
	if err != nil {
		return release{}, err
	}
	if err := remote.WriteIndex(tag, idx, remote.WithContext(ctx)); err != nil {
		return release{}, fmt.Errorf("pushing %s: %w", tag, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return release{}, err
	}
	return release{Version: version, Ref: tag.Context().Digest(d.String()),
		SourceCommit: fmt.Sprintf("%x", sha1.Sum([]byte("github.com/example/checkout@v"+version)))}, nil
}

// platformImage is the image of version for linux/arch: one layer holding
// /etc/checkout-release, every time stamp the Unix epoch.
func platformImage(version, arch string) (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := []byte("checkout " + version + " linux/" + arch + " (throughline demo image)\n")
	if err := tw.WriteHeader(&tar.Header{Name: "etc/checkout-release", Mode: 0o644, Size: int64(len(body)),
		ModTime: time.Unix(0, 0), Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(body); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(buf.Bytes(), types.OCILayer),
		History: v1.History{Created: v1.Time{Time: time.Unix(0, 0).UTC()}, CreatedBy: "throughline demo"}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Entrypoint = []string{"/checkout"}
	return mutate.ConfigFile(img, cf)
}

// attest is CI's signing step: the signature and three attestations of r
// (SLSA provenance v1 naming the example's builder and source
// repository, a CycloneDX SBOM, an in-toto vulns v0.2 scan finished at
// scanned with no finding), each a Sigstore bundle signed with key,
// attached under cosign's tags sha256-<hex>.sig and .att.
func attest(ctx context.Context, key *signing.Key, r release, scanned time.Time) error {
	repo := r.Ref.Context().String()
	preds := []struct {
		typ, body string
	}{
		{trust.PredicateSLSAProvenance, fmt.Sprintf(`{
  "buildDefinition": {
    "buildType": "https://actions.github.io/buildtypes/workflow/v1",
    "externalParameters": {"workflow": {"repository": %q, "path": ".github/workflows/release.yaml", "ref": "refs/tags/v%s"}},
    "resolvedDependencies": [{"uri": "git+%s@refs/tags/v%s", "digest": {"gitCommit": %q}}]
  },
  "runDetails": {"builder": {"id": %q}}
}`, sourceRepo, r.Version, sourceRepo, r.Version, r.SourceCommit, builderID)},
		{trust.PredicateCycloneDX, fmt.Sprintf(`{"bomFormat": "CycloneDX", "specVersion": "1.5",
  "metadata": {"component": {"type": "container", "name": "checkout", "version": %q}}, "components": []}`, r.Version)},
		{trust.PredicateVulns, fmt.Sprintf(`{
  "scanner": {"uri": "pkg:github/aquasecurity/trivy@v0.50.0", "db": {"lastUpdate": %q}, "result": []},
  "metadata": {"scanStartedOn": %q, "scanFinishedOn": %q}
}`, scanned.Format(time.RFC3339), scanned.Add(-time.Minute).Format(time.RFC3339), scanned.Format(time.RFC3339))},
	}
	stmt, err := signing.Statement(repo, r.Digest(), trust.PredicateSignature, nil)
	if err != nil {
		return err
	}
	sig, err := signing.Sign(ctx, key, stmt)
	if err != nil {
		return err
	}
	var atts [][]byte
	for _, p := range preds {
		stmt, err := signing.Statement(repo, r.Digest(), p.typ, []byte(p.body))
		if err != nil {
			return err
		}
		b, err := signing.Sign(ctx, key, stmt)
		if err != nil {
			return err
		}
		atts = append(atts, b)
	}
	opts := []remote.Option{remote.WithContext(ctx)}
	ref := r.Ref.String()
	if err := trust.AttachTag(ctx, ref, ".sig", [][]byte{sig}, opts); err != nil {
		return err
	}
	return trust.AttachTag(ctx, ref, ".att", atts, opts)
}
