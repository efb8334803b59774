package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/exitcode"
)

// TestServeUI: --ui-bind-address serves the pages read-only on the
// notifier's hardened server, and its flags are checked.
func TestServeUI(t *testing.T) {
	f := chainfixture.New(t, exampleRepo)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs bytes.Buffer
	u := uiFlags{addr: "127.0.0.1:0", ttl: time.Second}
	if err := u.start(ctx, nil, f.Dir, zerolog.New(&logs)); err != nil {
		t.Fatal(err)
	}
	var line struct{ Address string }
	if err := json.Unmarshal(bytes.SplitN(logs.Bytes(), []byte("\n"), 2)[0], &line); err != nil || line.Address == "" {
		t.Fatalf("no address logged: %v: %s", err, logs.String())
	}
	base := "http://" + line.Address
	resp, err := http.Get(base + "/promotion/checkout-production-4b7e2a91c3d5-1.html")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	resp, err = http.Post(base+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	for _, bad := range []uiFlags{
		{addr: "127.0.0.1:0"}, // no repository
		{addr: "127.0.0.1:0", repo: f.Dir, tlsCertFile: "tls.crt"},
		{addr: "127.0.0.1:0", repo: f.Dir, commitURL: "https://x/%d"},
	} {
		if err := bad.start(ctx, nil, "", zerolog.Nop()); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%+v: %v, want a usage error", bad, err)
		}
	}
	if err := (&uiFlags{}).start(ctx, nil, "", zerolog.Nop()); err != nil {
		t.Errorf("off by default: %v", err)
	}
}
