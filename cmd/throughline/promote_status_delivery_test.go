package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/delivery"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
)

// TestPromoteStatusDelivery: promote status --since prints the delivery
// metrics of the window per app and environment, as JSON and as a table
// (goldens of the chain view's story read at its Now), and refuses a
// window it cannot read.
func TestPromoteStatusDelivery(t *testing.T) {
	f := chainfixture.New(t, exampleRepo)
	for _, output := range []string{"json", "text"} {
		var out bytes.Buffer
		o := &promoteStatusOptions{repo: f.Dir, output: output,
			delivery: deliveryOptions{since: "30d", now: func() time.Time { return chainfixture.Now }}}
		if err := o.run(context.Background(), &out); err != nil {
			t.Fatal(err)
		}
		golden.Compare(t, "testdata/delivery/status-30d."+output, out.Bytes())
	}
	// Through the command line: the flags, an app, the JSON document.
	r := runCLI(t, "promote", "status", "--repo", f.Dir, "--since", "36500d", "--app", "cart", "-o", "json")
	if r.code != exitcode.OK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var rep delivery.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.SchemaVersion != delivery.SchemaVersion {
		t.Fatalf("not a %s document: %v\n%s", delivery.SchemaVersion, err, r.stdout)
	}
	if len(rep.Apps) != 1 || rep.Apps[0].App != "cart" || rep.Apps[0].Attempts != 3 {
		t.Fatalf("--app cart: %+v", rep.Apps)
	}
	// A file it cannot use is named, never fatal.
	bad := "evidence/production/checkout/checkout-production-4b7e2a91c3d5-1.json"
	f.Commit("broken evidence", map[string][]byte{bad: []byte("{")})
	r = runCLI(t, "promote", "status", "--repo", f.Dir, "--since", "36500d")
	if r.code != exitcode.OK || !strings.Contains(r.stdout, "skipped "+bad+": ") {
		t.Fatalf("exit %d, the broken evidence not named:\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{
		{"--since", "3x"}, {"--since", "-30d"}, {"--since", "0d"}, {"--since", "30d", "--all"}, {"--since", "30d", "-o", "yaml"},
	} {
		r := runCLI(t, append([]string{"promote", "status", "--repo", f.Dir}, args...)...)
		if r.code != exitcode.Usage || !strings.Contains(r.stderr, args[len(args)-1]) && !strings.Contains(r.stderr, "--since") {
			t.Errorf("%v: exit %d, want %d: %s", args, r.code, exitcode.Usage, r.stderr)
		}
	}
}
