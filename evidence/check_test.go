package evidence

import (
	"context"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/internal/gittest"
)

// TestRelate: the notifier's rule on a real history: main has desired and
// a later commit, a side line of history is unrelated, the first commit is
// earlier.
func TestRelate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gittest.Init(t, dir)
	commit := func(msg string) string { return gittest.Commit(t, dir, msg, nil) }
	first := commit("first")
	desired := commit("desired")
	later := commit("later")
	gittest.Run(t, dir, "checkout", "-q", "--orphan", "side")
	side := commit("side")
	repo, err := gitrepo.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		observed string
		want     Relation
	}{{desired, Desired}, {later, Later}, {first, Earlier}, {side, Unrelated}, {strings.Repeat("e", 40), Unrelated}} {
		got, err := Relate(context.Background(), repo.IsAncestor, desired, c.observed)
		if err != nil || got != c.want {
			t.Errorf("Relate(%s) = %v %v, want %v", c.observed, got, err, c.want)
		}
	}
}

// TestCheckPods: the imageIDs of the digest's Pods, by the verifier's match.
func TestCheckPods(t *testing.T) {
	t.Parallel()
	d := "sha256:" + strings.Repeat("a", 64)
	other := "sha256:" + strings.Repeat("b", 64)
	pod := func(declared, imageID, outcome, match string) Pod {
		return Pod{Workload: "Deployment/ns/app", Container: "app", Pod: "app-1", Declared: declared, ImageID: imageID, Outcome: outcome, Match: match}
	}
	for _, c := range []struct {
		name string
		pods []Pod
		want string
	}{
		{"exact", []Pod{pod(d, "docker-pullable://ghcr.io/x/app@"+d, "Verified", "Exact")}, ""},
		{"a sidecar of another image", []Pod{pod(d, "ghcr.io/x/app@"+d, "Verified", "Exact"), pod(other, "ghcr.io/x/side@"+other, "Verified", "Exact")}, ""},
		{"an index child the verifier resolved", []Pod{pod(d, "ghcr.io/x/app@"+other, "Verified", "IndexChild")}, ""},
		{"another digest claimed exact", []Pod{pod(d, "ghcr.io/x/app@"+other, "Verified", "Exact")}, "runs imageID ghcr.io/x/app@" + other},
		{"another digest, mismatch", []Pod{pod(d, "ghcr.io/x/app@"+other, "Mismatch", "")}, "runs imageID"},
		{"no imageID", []Pod{pod(d, "", "Pending", "")}, "no imageID reported yet"},
		{"no Pod", nil, "no Pod runs a container declared with " + d},
	} {
		r := &Record{Pods: c.pods}
		if got := r.CheckPods(d); (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
