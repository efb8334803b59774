package ledger

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/signedevidence"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/promotion"
)

// TestRememberedEvidenceIsReadAnew attacks the package's memory of opened
// evidence (openEvidence, by the SHA-256 of file and signature and the
// keys' Sum): after A's evidence was opened and proven, a later commit
// changes what decides the verdict at the same path, and the verdict there
// is the new one, through git and in process alike, while the verdict at
// the commit of the acceptance stays what it was.
func TestRememberedEvidenceIsReadAnew(t *testing.T) {
	t.Parallel()
	stranger := sshkey.NewNotifier(t, "staging", "production")
	for _, tc := range []struct {
		name string
		// change returns the files the later commit writes (as they are:
		// not signed by the test).
		change func(t *testing.T, h *history, file string) map[string]string
		// want checks ReadEvidence's answer at the later commit.
		want func(t *testing.T, ev *evidence.Record, err error)
	}{
		{"rewritten, the old signature kept", func(t *testing.T, h *history, file string) map[string]string {
			return map[string]string{file: string(evidenceOf(t, h.recA, promotion.Halted, dA))}
		}, refusedSignature},
		{"rewritten and signed again by the notifier", func(t *testing.T, h *history, file string) map[string]string {
			ev := evidenceOf(t, h.recA, promotion.Halted, dA)
			return map[string]string{file: string(ev), evidence.SignaturePath(file): string(signedevidence.Sign(t, h.g.notifier, ev))}
		}, func(t *testing.T, ev *evidence.Record, err error) {
			if err != nil || ev.Decision != promotion.Halted {
				t.Fatalf("re-signed HALTED evidence read as %+v, %v: want HALTED", ev, err)
			}
		}},
		{"signed again by a key the policy does not list", func(t *testing.T, h *history, file string) map[string]string {
			data, err := os.ReadFile(filepath.Join(h.g.dir, filepath.FromSlash(file))) // the work tree holds the tip
			must(t, err)
			return map[string]string{evidence.SignaturePath(file): string(signedevidence.Sign(t, stranger, data))}
		}, refusedSignature},
		{"the notifier keys rotated", func(t *testing.T, _ *history, _ string) map[string]string {
			return map[string]string{sshkey.EvidenceSignersFile: stranger.Line()}
		}, refusedSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			h := newHistory(t)
			file := evidence.Path("production", "web", h.recA.PromotionID)
			fast, err := gitops.OpenLocal(ctx, h.g.dir)
			must(t, err)
			must(t, fast.ReadInProcess())
			readers := map[string]*gitops.Repo{"git": h.repo, "in process": fast}
			for name, r := range readers {
				keys, err := EvidenceKeysAt(ctx, r, h.tip)
				must(t, err)
				if ev, found, err := ReadEvidence(ctx, r, h.tip, file, "web", "production", keys); err != nil || !found || ev.Decision != promotion.Accepted {
					t.Fatalf("%s: A's evidence before the change: %+v, %v, %v", name, ev, found, err)
				}
				if !acceptedIn(t, r, h.tip, h.recA.PromotionID) {
					t.Fatalf("%s: A not proven before the change", name)
				}
			}
			later := gittest.Commit(t, h.g.dir, "change "+tc.name, tc.change(t, h, file))
			for name, r := range readers {
				keys, err := EvidenceKeysAt(ctx, r, later)
				must(t, err)
				ev, _, err := ReadEvidence(ctx, r, later, file, "web", "production", keys)
				t.Run(name, func(t *testing.T) { tc.want(t, ev, err) })
				if acceptedIn(t, r, later, h.recA.PromotionID) {
					t.Errorf("%s: A still proven after %s", name, tc.name)
				}
				// At the acceptance's own commit nothing changed.
				keys, err = EvidenceKeysAt(ctx, r, h.cA)
				must(t, err)
				if ev, _, err := ReadEvidence(ctx, r, h.cA, file, "web", "production", keys); err != nil || ev.Decision != promotion.Accepted {
					t.Errorf("%s: A's evidence at its own commit: %+v, %v", name, ev, err)
				}
			}
		})
	}
}

func refusedSignature(t *testing.T, ev *evidence.Record, err error) {
	t.Helper()
	var re *exitcode.Refusal
	if !errors.As(err, &re) || re.Rule != RuleEvidenceSignature {
		t.Fatalf("read as %+v, %v: want a refusal %s", ev, err, RuleEvidenceSignature)
	}
}

// acceptedIn reports whether History at rev proves promotion id.
func acceptedIn(t *testing.T, r *gitops.Repo, rev, id string) bool {
	t.Helper()
	l, err := History(context.Background(), r, rev, "web", "production")
	must(t, err)
	for _, a := range l.Accepted {
		if a.PromotionID == id {
			return true
		}
	}
	return false
}

// TestSharedRecordsCannotBeChanged: the versions every Reader shares and
// the evidence every reader opens are handed out as copies: a caller that
// changes what it got (deep inside) changes nothing another reads.
func TestSharedRecordsCannotBeChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHistory(t)
	want, err := promotion.ReadRecord(ctx, h.repo, h.cA, "web", "production")
	must(t, err)
	read := func() *promotion.Record {
		v, err := (&Reader{Repo: h.repo}).Version(ctx, h.cA, "web", "production")
		must(t, err)
		return v.Record()
	}
	got := read()
	got.State = promotion.Halted
	got.History[0].By = "mallory"
	got.Accepted.ObservedRevision = strings.Repeat("9", 40)
	got.VerifiedIn.Environment = "dev"
	got.History = append(got.History, got.History[0])
	if again := read(); !reflect.DeepEqual(again, want) {
		t.Fatalf("a changed copy changed the shared version:\n got %+v\nwant %+v", again, want)
	}
	vs, err := (&Reader{Repo: h.repo}).Versions(ctx, h.tip, "web", "production")
	must(t, err)
	for _, v := range vs {
		if r := v.Record(); r != nil {
			r.PromotionID, r.Artifact.Digest = "mallory", dD
		}
	}
	l, err := History(ctx, h.repo, h.tip, "web", "production")
	must(t, err)
	if len(l.Accepted) != 2 || l.Accepted[1].PromotionID != h.recA.PromotionID || l.Accepted[1].Artifact.Digest != dA {
		t.Fatalf("history after changing copies: %+v", l.Accepted)
	}

	file := evidence.Path("production", "web", h.recA.PromotionID)
	data, err := h.repo.ReadFile(ctx, h.cA, file)
	must(t, err)
	wantEv, err := evidence.Parse(file, data)
	must(t, err)
	keys, err := EvidenceKeysAt(ctx, h.repo, h.cA)
	must(t, err)
	readEv := func() *evidence.Record {
		ev, _, err := ReadEvidence(ctx, h.repo, h.cA, file, "web", "production", keys)
		must(t, err)
		return ev
	}
	ev := readEv()
	ev.Decision = promotion.Halted
	ev.Pods[0].Declared = dD
	ev.Pods = append(ev.Pods, ev.Pods[0])
	if again := readEv(); !reflect.DeepEqual(again, wantEv) {
		t.Fatalf("a changed copy changed the remembered evidence:\n got %+v\nwant %+v", again, wantEv)
	}
}
