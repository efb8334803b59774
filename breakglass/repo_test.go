package breakglass

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
)

func marshal(t *testing.T, rec *Record) string {
	t.Helper()
	data, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestReadRecord: the pause record through the strict reader: absent is
// nil, one that does not parse or names another app or environment than
// its path is invalid input naming the file.
func TestReadRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := pausedRecord(strings.Repeat("a", 40))
	other := pausedRecord(strings.Repeat("a", 40))
	other.App = "api"
	r, rev := gitopsRepo(t, map[string]string{
		Path("production", "web"):  marshal(t, rec),
		Path("production", "copy"): marshal(t, other), // copied, not edited
		Path("production", "bad"):  "schemaVersion: breakglass/v1\nunknown: 1\n",
	})
	for _, tc := range []struct {
		app   string
		found bool
		code  int
	}{
		{"web", true, exitcode.OK},
		{"none", false, exitcode.OK},
		{"copy", false, exitcode.Invalid},
		{"bad", false, exitcode.Invalid},
	} {
		got, err := ReadRecord(ctx, r, rev, tc.app, "production")
		if (got != nil) != tc.found || exitcode.Code(err) != tc.code {
			t.Errorf("ReadRecord(%s) = %v, %v; want found %v, exit %d", tc.app, got, err, tc.found, tc.code)
		}
		var ii *exitcode.InvalidInput
		var re *RecordError
		file := Path("production", tc.app)
		named := errors.As(err, &ii) && ii.File == file || errors.As(err, &re) && re.File == file
		if err != nil && !named {
			t.Errorf("ReadRecord(%s): the error does not name the file: %v", tc.app, err)
		}
	}
}

// TestCommitRecord: the record and the extra files in one commit on the
// branch tip; check sees the record at the tip and its refusal stops the
// commit.
func TestCommitRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, base := gitopsRepo(t, map[string]string{"README": "x\n"})
	rec := pausedRecord(base)
	var seen []*Record
	sha, err := CommitRecord(ctx, r, "main", rec, map[string][]byte{"breakglass/production/web.evidence/x.json": []byte("{}\n")}, "pause\n",
		func(prev *Record) error { seen = append(seen, prev); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != nil {
		t.Fatalf("check saw %v, want no record", seen)
	}
	if got, err := ReadRecord(ctx, r, sha, "web", "production"); err != nil || got == nil || got.Ticket != rec.Ticket {
		t.Fatalf("record at %s: %v, %v", sha, got, err)
	}
	if ev, err := r.ReadFile(ctx, sha, "breakglass/production/web.evidence/x.json"); err != nil || string(ev) != "{}\n" {
		t.Fatalf("evidence at %s: %q, %v", sha, ev, err)
	}
	if tip, _ := r.Resolve(ctx, "refs/heads/main"); tip != sha {
		t.Fatalf("main at %s, want %s", tip, sha)
	}
	_, err = CommitRecord(ctx, r, "main", rec, nil, "again\n", func(prev *Record) error {
		if prev.Active() {
			return exitcode.Refuse(RulePause, "already paused")
		}
		return nil
	})
	if exitcode.Code(err) != exitcode.Refused {
		t.Fatalf("a refused check: %v", err)
	}
	if tip, _ := r.Resolve(ctx, "refs/heads/main"); tip != sha {
		t.Fatalf("a refused commit moved main to %s", tip)
	}
}

// TestMerged: the write-back is merged when it is an ancestor of the base,
// or when the base has every file as the write-back wrote it (a squash
// merge); else, and without a write-back, resume is refused.
func TestMerged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, base := gitopsRepo(t, map[string]string{"apps/web/overlays/production/kustomization.yaml": "resources: []\n"})
	patch := map[string][]byte{"apps/web/overlays/production/kustomization.yaml": []byte("resources: []\npatches:\n- path: p.yaml\n"),
		"apps/web/overlays/production/p.yaml": []byte("kind: Deployment\n")}
	wb, err := r.Commit(ctx, base, patch, "write-back\n")
	if err != nil {
		t.Fatal(err)
	}
	merge, err := r.Commit(ctx, wb, map[string][]byte{"README": []byte("later\n")}, "merged and more\n")
	if err != nil {
		t.Fatal(err)
	}
	squash, err := r.Commit(ctx, base, patch, "squashed\n")
	if err != nil {
		t.Fatal(err)
	}
	partly, err := r.Commit(ctx, base, map[string][]byte{"apps/web/overlays/production/p.yaml": []byte("kind: Deployment\n")}, "half\n")
	if err != nil {
		t.Fatal(err)
	}
	rec := pausedRecord(base)
	// Each refused by rule breakglass; why is in the golden file, with the
	// commit ids (new at every run) named.
	record := golden.ErrorLines(t, "testdata/merged.golden", 4, wb, "<write-back>", base, "<base>", partly, "<half>")
	for _, tc := range []struct {
		name, commit, base string
		merged             bool
	}{
		{"ancestor", wb, merge, true},
		{"itself", wb, wb, true},
		{"squash merge", wb, squash, true},
		{"not merged", wb, base, false},
		{"half merged", wb, partly, false},
		{"unknown commit", strings.Repeat("0", 39) + "1", base, false},
	} {
		// not parallel: the cases share rec
		t.Run(tc.name, func(t *testing.T) {
			rec.Writeback = &Writeback{Branch: "throughline/breakglass/web/production/inc-42", Commit: tc.commit}
			got, err := Merged(ctx, r, rec, tc.base)
			if tc.merged {
				if err != nil || got != tc.base {
					t.Fatalf("Merged = %q, %v; want %s", got, err, tc.base)
				}
				return
			}
			if re := (*exitcode.Refusal)(nil); !errors.As(err, &re) || re.Rule != RulePause {
				t.Fatalf("Merged = %q, %v; want refused", got, err)
			}
			record(tc.name, err)
		})
	}
	rec.Writeback = nil
	_, err = Merged(ctx, r, rec, base)
	if re := (*exitcode.Refusal)(nil); !errors.As(err, &re) || re.Rule != RulePause {
		t.Fatalf("without a write-back: %v", err)
	}
	record("without a write-back", err)
}

// TestSourceCommit: a Flux revision names its commit after the last colon.
func TestSourceCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, base := gitopsRepo(t, map[string]string{"README": "x\n"})
	for rev, want := range map[string]string{base: base, "main@sha1:" + base: base, "main": base} {
		rec := pausedRecord(base)
		rec.SourceRevision = rev
		if got, err := SourceCommit(ctx, r, rec); err != nil || got != want {
			t.Errorf("SourceCommit(%s) = %s, %v; want %s", rev, got, err, want)
		}
	}
}
