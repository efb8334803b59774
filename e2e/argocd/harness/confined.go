package harness

// Issue 30 through Argo CD's real cmp-server: a chart's values.schema.json
// that points outside the chart reaches neither the network nor the
// sidecar's files, and an HTTP chart repository whose index.yaml is huge
// ends the render at its memory budget instead of growing the plugin past
// the sidecar's limit.

import (
	"crypto/sha256"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// hugeIndexSize is the index.yaml the hostile chart repository serves: under
// the 64 MiB wire limit, so it is downloaded, and far over what a render
// may spend decoding it (it took 1.2 GB in the plugin before).
const hugeIndexSize = 60 << 20

// indexRepo is an HTTPS chart repository on 127.0.0.1 whose index.yaml is
// hugeIndexSize of entries; served counts the index's bytes written.
type indexRepo struct {
	url    string
	served atomic.Int64
}

// startIndexRepo starts the repository and points SSL_CERT_FILE at its
// certificate (before the cmp-server starts: the plugin inherits it).
func startIndexRepo(t *testing.T) *indexRepo {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n  web:\n")
	for i := 0; b.Len() < hugeIndexSize; i++ {
		fmt.Fprintf(&b, "  - name: web\n    version: 0.%d.%d\n    urls: [charts/web-0.%d.%d.tgz]\n    digest: %064x\n",
			i/1000, i%1000, i/1000, i%1000, i)
	}
	index := []byte(b.String())
	r := &indexRepo{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/stable/index.yaml" {
			http.NotFound(w, req)
			return
		}
		n, _ := w.Write(index)
		r.served.Add(int64(n))
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/stable"
	ca := filepath.Join(t.TempDir(), "ca.pem")
	Must(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644))
	t.Setenv("SSL_CERT_FILE", ca)
	return r
}

// schemaApps are chart apps whose values.schema.json points outside the
// chart; HOST is the HTTP recorder.
var schemaApps = map[string]string{
	"apps/schema/ref-http":   `{"type": "object", "properties": {"x": {"$ref": "http://HOST/schema.json"}}}`,
	"apps/schema/schema-url": `{"$schema": "http://HOST/meta.json", "type": "object"}`,
	"apps/schema/ref-file":   `{"type": "object", "properties": {"x": {"$ref": "file:///proc/self/environ"}}}`,
	"apps/schema/id-base":    `{"$id": "http://HOST/base/", "type": "object", "properties": {"x": {"$ref": "x.json"}}}`,
}

// confinedApps adds the schema apps and the huge-index app to files.
func confinedApps(files map[string]string, h *hostileNet) {
	for rel, schema := range schemaApps {
		files[rel+"/.throughline"] = ""
		files[rel+"/Chart.yaml"] = "apiVersion: v2\nname: schema\nversion: 0.1.0\n"
		files[rel+"/values.yaml"] = "x: 1\n"
		files[rel+"/values.schema.json"] = strings.ReplaceAll(schema, "HOST", h.httpHost)
		files[rel+"/templates/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {x: \"{{ .Values.x }}\"}\n"
	}
	rel := "apps/chart-index/huge"
	files[rel+"/.throughline"] = ""
	files[rel+"/kustomization.yaml"] = fmt.Sprintf("helmCharts:\n- name: web\n  repo: %s\n  version: 1.2.3\n  releaseName: web\n", h.index.url)
	files[rel+"/throughline-charts.lock.yaml"] = fmt.Sprintf("apiVersion: throughline.dev/v1alpha1\nkind: ChartLock\n"+
		"charts:\n- repo: %s\n  name: web\n  version: 1.2.3\n  digest: sha256:%x\n", h.index.url, sha256.Sum256([]byte("web")))
}

// runConfined generates the schema apps and the huge-index app.
func runConfined(t *testing.T, generate func(rel string) ([]string, error), h *hostileNet) {
	t.Run("chart schema stays inside the chart", func(t *testing.T) {
		for rel := range schemaApps {
			t.Run(filepath.Base(rel), func(t *testing.T) {
				got, err := generate(rel)
				if err == nil || len(got) != 0 {
					t.Fatalf("GenerateManifest = %d manifests, err %v; want a refusal", len(got), err)
				}
				if !strings.Contains(err.Error(), "values.schema.json") {
					t.Errorf("the error does not name values.schema.json: %v", err)
				}
				for _, leak := range []string{"invalid character", "PATH=", "HOME="} {
					if strings.Contains(err.Error(), leak) {
						t.Errorf("the error tells what the target holds (%q): %v", leak, err)
					}
				}
				h.checkQuiet(t)
			})
		}
	})
	t.Run("huge chart index", func(t *testing.T) {
		got, err := generate("apps/chart-index/huge")
		if err == nil || len(got) != 0 {
			t.Fatalf("GenerateManifest = %d manifests, err %v; want a refusal", len(got), err)
		}
		for _, want := range []string{"exit status 4", "index.yaml of chart web", "memory budget"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not name %q: %v", want, err)
			}
		}
		t.Logf("served %d MiB of index.yaml; refused%s", h.index.served.Load()>>20, wrapperStats(err.Error()))
	})
}
