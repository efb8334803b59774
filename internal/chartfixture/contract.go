package chartfixture

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
)

// ValuesSchema is the values.schema.json of SchemaTgz: size an integer in
// 1..10, with a $id and a version keyword.
const ValuesSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://charts.example.invalid/web/values.schema.json",
  "version": "2",
  "type": "object",
  "properties": {
    "size": {"type": "integer", "minimum": 1, "maximum": 10},
    "note": {"type": "string"}
  }
}
`

// SchemaTgz is a chart package with values.yaml (size 1), ValuesSchema and
// a ConfigMap named after the release holding size and note; note makes
// two packages of one version differ.
func SchemaTgz(t testing.TB, name, version, note string) []byte {
	t.Helper()
	return Package(t, map[string]string{
		name + "/Chart.yaml":         fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\ndescription: %s\n", name, version, note),
		name + "/values.yaml":        "size: 1\nnote: " + note + "\n",
		name + "/values.schema.json": ValuesSchema,
		name + "/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n" +
			"  size: {{ .Values.size | quote }}\n  note: {{ .Values.note | quote }}\n",
	})
}

// Package is a chart package of the files (path in the archive -> body),
// written in sorted order.
func Package(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, n := range names {
		body := files[n]
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// StartRegistry starts an OCI registry (go-containerregistry's
// distribution implementation) on 127.0.0.1, stopped at the test's end, and
// returns its host:port. DOCKER_CONFIG is pointed at an empty directory so
// no credentials of the machine are used.
func StartRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	return strings.TrimPrefix(srv.URL, "http://")
}
