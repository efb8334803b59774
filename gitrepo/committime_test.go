package gitrepo

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/internal/gittest"
)

// TestCommitTime: the committer time (not the author's) of a commit, the
// same through git, in process on a work tree and on an in-process clone;
// a commit the repository does not hold wraps ErrNotFound.
func TestCommitTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, dir := newRepo(t)
	// Author and committer dates differ, as for a pull request merged later.
	gittest.Run(t, dir, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "--allow-empty", "-m", "merge",
		"--date=2026-11-20T09:00:00Z")
	head := gittest.Run(t, dir, "rev-parse", "HEAD")
	want, err := time.Parse(time.RFC3339, gittest.Run(t, dir, "log", "-1", "--format=%cI", head))
	if err != nil {
		t.Fatal(err)
	}
	rr := newRemote(t)
	mem := rr.clone(t, filepath.Join(t.TempDir(), "clone"))
	memHead := rr.tip(t)
	memWant, err := time.Parse(time.RFC3339, gittest.Run(t, rr.seed, "log", "-1", "--format=%cI", memHead))
	if err != nil {
		t.Fatal(err)
	}
	fast := *r
	must(t, fast.ReadInProcess())
	for _, tc := range []struct {
		name      string
		repo      *Repo
		rev       string
		want      time.Time
		wantError bool
	}{
		{name: "git", repo: r, rev: head, want: want},
		{name: "git HEAD", repo: r, rev: "HEAD", want: want},
		{name: "in process", repo: &fast, rev: head, want: want},
		{name: "clone", repo: mem, rev: memHead, want: memWant},
		{name: "git unknown", repo: r, rev: strings.Repeat("e", 40), wantError: true},
		{name: "in process unknown", repo: &fast, rev: strings.Repeat("e", 40), wantError: true},
		{name: "clone unknown", repo: mem, rev: strings.Repeat("e", 40), wantError: true},
		{name: "option", repo: r, rev: "--all", wantError: true},
	} {
		got, err := tc.repo.CommitTime(ctx, tc.rev)
		if tc.wantError {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("%s: %s, %v; want ErrNotFound", tc.name, got, err)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) || got.Location() != time.UTC {
			t.Errorf("%s: %s, %v; want %s", tc.name, got, err, tc.want)
		}
	}
}
