package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/throughline-dev/throughline/chainview"
	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/exitcode"
)

// TestServeUIAPIToken: with --ui-api-token-file the JSON API (what Argo
// CD's proxy extension forwards, adding the token from argocd-secret)
// answers only with the token; an empty or missing file is a usage error.
func TestServeUIAPIToken(t *testing.T) {
	f := chainfixture.New(t, exampleRepo)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	tokenFile, empty := filepath.Join(dir, "token"), filepath.Join(dir, "empty")
	if err := os.WriteFile(tokenFile, []byte("api-t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	u := uiFlags{addr: "127.0.0.1:0", ttl: time.Second, apiTokenFile: tokenFile}
	if err := u.start(ctx, nil, &notifierFlags{repoDir: f.Dir}, zerolog.New(&logs)); err != nil {
		t.Fatal(err)
	}
	var line struct{ Address string }
	if err := json.Unmarshal(bytes.SplitN(logs.Bytes(), []byte("\n"), 2)[0], &line); err != nil || line.Address == "" {
		t.Fatalf("no address logged: %v: %s", err, logs.String())
	}
	url := "http://" + line.Address + chainview.APIApplication + "?app=checkout&env=production"
	for _, tc := range []struct {
		auth string
		code int
	}{{"", 401}, {"Bearer api-t0ke", 401}, {"Bearer api-t0ken", 200}} {
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("Authorization %q: %d, want %d", tc.auth, resp.StatusCode, tc.code)
		}
	}
	for _, file := range []string{empty, filepath.Join(dir, "missing")} {
		bad := uiFlags{addr: "127.0.0.1:0", repo: f.Dir, apiTokenFile: file}
		if err := bad.start(ctx, nil, &notifierFlags{}, zerolog.Nop()); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("--ui-api-token-file %s: %v, want a usage error", file, err)
		}
	}
}
