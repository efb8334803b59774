package render_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/resource"

	"github.com/throughline-dev/throughline/render"
)

// fuzzFields are kustomization fields the fuzzer puts an entry into; %s is
// the entry as a JSON string, field how the renderer names it.
var fuzzFields = []struct{ yaml, field string }{
	{"resources: [cm.yaml, %s]\n", "resources[1]"},
	{"resources: [cm.yaml]\ncomponents: [%s]\n", "components[0]"},
	{"resources: [cm.yaml]\npatches: [{path: %s}]\n", "patches[0].path"},
	{"resources: [cm.yaml]\npatchesStrategicMerge: [%s]\n", "patchesStrategicMerge[0]"},
	{"resources: [cm.yaml]\ngenerators: [%s]\n", "generators[0]"},
	{"resources: [cm.yaml]\nconfigMapGenerator: [{name: c, files: [%s]}]\n", "configMapGenerator[0].files[0]"},
	{"resources: [cm.yaml]\nsecretGenerator: [{name: c, envs: [%s]}]\n", "secretGenerator[0].envs[0]"},
	{"resources: [cm.yaml]\nreplacements: [{path: %s}]\n", "replacements[0].path"},
}

// kustomizeWouldReach is the oracle: kustomize v0.21's loader fetches what
// url.Parse gives an http(s) scheme (IsRemoteFile) and clones what its git
// parser accepts (reached through resource.Origin.Append).
func kustomizeWouldReach(entry string) bool {
	if u, err := url.Parse(entry); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		return true
	}
	repo := false
	func() {
		defer func() { _ = recover() }()
		repo = (&resource.Origin{}).Append(entry).Repo != ""
	}()
	return repo
}

// FuzzRemoteEntry feeds generated entries to the remote decision and, through
// a kustomization, to Open: any entry kustomize's loader would fetch or clone
// must be decided remote and listed as a remote entry of its field (which
// Build refuses before krusty runs); Open must never panic.
func FuzzRemoteEntry(f *testing.F) {
	for _, seed := range []string{
		"http://127.0.0.1:18080/patch.yaml", "HTTP://127.0.0.1/p.yaml", "HtTpS://x/p", "https://x/o/r.git?ref=v1",
		"git::https://example.test/r.git", "git@127.0.0.1:org/repo", "user@host:org/repo", "file:///etc/passwd",
		"github.com/org/repo?ref=v1", "ssh://git@127.0.0.1/org/repo", "creds=HTTP://169.254.169.254/latest",
		"cm.yaml", "../x", "a:b", "http:x", " https://x/y", "GitHub.COM:org/repo", "dev.azure.com/o/p/_git/r",
		"apiVersion: v1\nkind: ConfigMap\n", "k=v=w", "=http://x", "http://[::1]:80/x",
	} {
		for i := range fuzzFields {
			f.Add(seed, uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, entry string, which uint8) {
		entry = strings.ToValidUTF8(entry, "?")
		reach := kustomizeWouldReach(entry)
		if reach && !render.KustomizeRemote(entry) {
			t.Fatalf("kustomize would reach %q but KustomizeRemote says local", entry)
		}
		if reach && !render.IsRemote(entry) {
			t.Fatalf("kustomize would reach %q but IsRemote says local", entry)
		}
		field := fuzzFields[int(which)%len(fuzzFields)]
		quoted, err := json.Marshal(entry)
		if err != nil {
			t.Skip()
		}
		root := t.TempDir()
		for name, body := range map[string]string{
			"app/kustomization.yaml": strings.Replace(field.yaml, "%s", string(quoted), 1),
			"app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		} {
			p := filepath.Join(root, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		app, err := render.Open(context.Background(), render.Options{Root: root, Path: "app"})
		if err != nil || !reach {
			return
		}
		for _, r := range app.Remote() {
			if r.Field == field.field {
				return
			}
		}
		t.Fatalf("%s: %q is one kustomize would reach, but it is not a remote entry: %+v", field.field, entry, app.Remote())
	})
}
