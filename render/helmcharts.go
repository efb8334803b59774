package render

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
)

// ValuesSchemaFile is the values schema a chart may carry at its root.
const ValuesSchemaFile = "values.schema.json"

// maxPackageUnpacked caps what ChartsUsed unpacks of a chart package
// (the engine's own cap, helmrender.MaxUnpacked).
const maxPackageUnpacked = 32 << 20

// ChartDigester is implemented by a ChartSource that tells the digest a
// lock file pins a remote chart to (chartsource.ForRender): the digest the
// fetched package was verified against. A render records it in the
// Acceptance (ChartsUsed).
type ChartDigester interface {
	ChartDigest(ctx context.Context, files ChartFiles, dir string, ref ChartRef) (string, error)
}

// UsedChart is one chart a render used: a remote package pinned by digest
// (Source the chart repository, Digest the pinned OCI manifest or .tgz
// digest), or a chart of the repository (Source its directory relative to
// the root, Digest the sha256 of its files as the render read them: see
// TreeDigest).
type UsedChart struct {
	Name, Version, Digest, Source string
	// SchemaDigest is the sha256 of the chart's values.schema.json as
	// packaged ("" when it has none); SchemaID its $id and SchemaVersion
	// its "version" keyword, when present.
	SchemaDigest, SchemaID, SchemaVersion string
	// Remote reports a chart from a chart repository.
	Remote bool
}

// ChartsUsed lists the charts a built app rendered (call it after Build):
// the chart of a chart app and each helmCharts entry, local or remote, and
// a chart app's remote dependencies, each once, in render order. Vendored
// subcharts are part of their parent's digest. Remote charts are those
// Build fetched; their digest is what the chart source pinned. Every file
// is read through the app's confined filesystem (traced with the render).
func (a *App) ChartsUsed(ctx context.Context) ([]UsedChart, error) {
	var out []UsedChart
	seen := map[string]bool{}
	add := func(c UsedChart) {
		k := c.Source + "\x00" + c.Name + "\x00" + c.Version + "\x00" + c.Digest
		if !seen[k] {
			seen[k] = true
			out = append(out, c)
		}
	}
	if a.Mode == ModeHelm {
		c, err := a.localUsed(a.Dir)
		if err != nil {
			return nil, err
		}
		add(c)
		deps, err := a.missingDependencies(a.Dir)
		if err != nil {
			return nil, err
		}
		for _, n := range deps {
			c, err := a.remoteUsed(ctx, n)
			if err != nil {
				return nil, err
			}
			add(c)
		}
	}
	for _, k := range a.Kustomizations {
		for i, h := range k.helm {
			dir, local, err := a.localChart(k, h)
			if err != nil {
				return nil, err
			}
			var c UsedChart
			if local {
				c, err = a.localUsed(dir)
			} else {
				c, err = a.remoteUsed(ctx, chartNeed{File: k.File, Field: k.HelmCharts[i].Field + ".repo", Dir: path.Dir(k.File),
					Ref: ChartRef{Repo: h.Repo, Name: h.Name, Version: h.Version}})
			}
			if err != nil {
				return nil, err
			}
			add(c)
		}
	}
	return out, nil
}

// localUsed describes the chart of the repository in dir.
func (a *App) localUsed(dir string) (UsedChart, error) {
	files, err := a.chartFiles(dir)
	if err != nil {
		return UsedChart{}, err
	}
	c := UsedChart{Source: a.FS.Rel(dir), Digest: TreeDigest(files)}
	for _, f := range files {
		switch f.Name {
		case "Chart.yaml":
			var meta struct{ Name, Version string }
			if err := sigyaml.Unmarshal(f.Data, &meta); err != nil {
				return UsedChart{}, &exitcode.InvalidInput{File: path.Join(c.Source, f.Name), Err: fmt.Errorf("parsing Chart.yaml: %w", err)}
			}
			c.Name, c.Version = meta.Name, meta.Version
		case ValuesSchemaFile:
			c.SchemaDigest, c.SchemaID, c.SchemaVersion = SchemaIdentity(f.Data)
		}
	}
	return c, nil
}

// remoteUsed describes a fetched remote chart: the digest its pin names,
// the values schema from its package.
func (a *App) remoteUsed(ctx context.Context, n chartNeed) (UsedChart, error) {
	data, err := a.chart(n)
	if err != nil {
		return UsedChart{}, err
	}
	c := UsedChart{Name: n.Ref.Name, Version: n.Ref.Version, Source: n.Ref.Repo, Remote: true}
	if d, ok := a.charts.(ChartDigester); ok {
		if c.Digest, err = d.ChartDigest(ctx, a.FS, n.Dir, n.Ref); err != nil {
			return UsedChart{}, err
		}
	} else {
		c.Digest = digestOf(data)
	}
	schema, err := PackageFile(data, ValuesSchemaFile, a.FS.maxFileSize)
	if err != nil {
		return UsedChart{}, &exitcode.InvalidInput{File: n.File, Err: fmt.Errorf("%s: chart %q %s: %w", n.Field, n.Ref.Name, n.Ref.Version, err)}
	}
	if schema != nil {
		c.SchemaDigest, c.SchemaID, c.SchemaVersion = SchemaIdentity(schema)
	}
	return c, nil
}

// TreeDigest is the digest of a chart of the repository: the sha256 over
// its files (as the render reads them, .helmignore applied) in name order,
// each as its name, a NUL, its length in decimal, a NUL and its bytes.
func TreeDigest(files []ChartFile) string {
	sorted := append([]ChartFile(nil), files...)
	slices.SortStableFunc(sorted, func(x, y ChartFile) int { return strings.Compare(x.Name, y.Name) })
	h := sha256.New()
	for _, f := range sorted {
		fmt.Fprintf(h, "%s\x00%d\x00", f.Name, len(f.Data))
		h.Write(f.Data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func digestOf(data []byte) string {
	s := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(s[:])
}

// SchemaIdentity is the identity of a values.schema.json: its sha256, and
// its $id and top-level "version" keyword when it has them (a string, or a
// number written as JSON writes it). A file that is not a JSON object has a
// digest only.
func SchemaIdentity(data []byte) (digest, id, version string) {
	digest = digestOf(data)
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return digest, "", ""
	}
	_ = json.Unmarshal(top["$id"], &id)
	if raw, ok := top["version"]; ok {
		var s string
		var n json.Number
		switch {
		case json.Unmarshal(raw, &s) == nil:
			version = s
		case json.Unmarshal(raw, &n) == nil:
			if _, err := strconv.ParseFloat(string(n), 64); err == nil {
				version = string(n)
			}
		}
	}
	return digest, id, version
}

// PackageFile returns the file name at the root of the chart in a chart
// package (.tgz: <chart>/<name>), nil when it has none. The package is read
// within the engine's caps: at most 32 MiB unpacked, the file at most
// maxFile bytes; a path escaping the archive is an error.
func PackageFile(pkg []byte, name string, maxFile int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(pkg))
	if err != nil {
		return nil, fmt.Errorf("not a chart package (gzip): %w", err)
	}
	tr := tar.NewReader(io.LimitReader(zr, maxPackageUnpacked))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the chart package: %w", err)
		}
		p := filepath.ToSlash(h.Name)
		if strings.HasPrefix(p, "/") || strings.Contains("/"+p+"/", "/../") {
			return nil, fmt.Errorf("chart package path %q escapes the archive", h.Name)
		}
		parts := strings.Split(strings.TrimPrefix(path.Clean(p), "./"), "/")
		if len(parts) != 2 || parts[1] != name || h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Size > maxFile {
			return nil, fmt.Errorf("%s: %w: %d bytes, limit %d", p, ErrTooLarge, h.Size, maxFile)
		}
		data, err := io.ReadAll(io.LimitReader(tr, maxFile+1))
		if err != nil {
			return nil, fmt.Errorf("reading %s of the chart package: %w", p, err)
		}
		return data, nil
	}
}
