package evidence

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/forge"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/promotion"
)

func record() *Record {
	rev := strings.Repeat("a", 40)
	return &Record{SchemaVersion: SchemaVersion, App: "checkout", Environment: "production", PromotionID: "checkout-production-abababababab-1",
		Decision: promotion.Accepted, ArtifactDigest: "sha256:" + strings.Repeat("ab", 32), DesiredRevision: rev, ObservedRevision: rev,
		Time: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), ReportedBy: Reporter{Source: "flux"}}
}

func TestRecordAcceptsOnlyTheApprovedRender(t *testing.T) {
	t.Parallel()
	r := record()
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("x.json", b); err != nil {
		t.Fatal(err)
	}
	r.ObservedRevision = strings.Repeat("b", 40)
	_, err = r.Marshal()
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "observedRevision" || fe.File != Path(r.Environment, r.App, r.PromotionID) {
		t.Fatalf("err %v", err)
	}
	golden.Compare(t, "testdata/later-commit.golden", []byte(err.Error()+"\n"))
	// A later commit is ACCEPTED only with the approved rendered hash and a
	// reason saying so.
	hash := "sha256:" + strings.Repeat("1", 64)
	r.DesiredRenderedHash, r.RenderedHash = hash, "sha256:"+strings.Repeat("2", 64)
	r.Reason = "observed bbbb, later than the desired aaaa"
	if _, err := r.Marshal(); err == nil {
		t.Fatal("later commit with another rendered hash ACCEPTED")
	}
	r.RenderedHash, r.Reason = hash, ""
	if _, err := r.Marshal(); err == nil {
		t.Fatal("later commit ACCEPTED without a reason")
	}
	r.Reason = "observed bbbb, later than the desired aaaa, renders the approved objects"
	if _, err := r.Marshal(); err != nil {
		t.Fatal(err)
	}
	r.Reason = ""
	r.Decision = promotion.Halted
	if _, err := r.Marshal(); err == nil {
		t.Fatal("HALTED without a reason")
	}
	r.Reason = "wrong revision"
	if _, err := r.Marshal(); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("x.json", []byte(`{"schemaVersion":"evidence/v1","extra":1}`)); err == nil {
		t.Fatal("unknown field accepted")
	}
	if Path("production", "checkout", "id") != "evidence/production/checkout/id.json" || Context("production", "checkout") != "throughline/production/checkout" {
		t.Fatal("path or context")
	}
}

type flaky struct {
	fail  []error
	calls []forge.CommitStatus
}

func (f *flaky) SetCommitStatus(_ context.Context, st forge.CommitStatus) error {
	f.calls = append(f.calls, st)
	if len(f.fail) > 0 {
		err := f.fail[0]
		f.fail = f.fail[1:]
		return err
	}
	return nil
}

func TestStatusSinkRetries(t *testing.T) {
	t.Parallel()
	f := &flaky{fail: []error{errors.New("connection reset"), &forge.APIError{Kind: forge.GitHub, Status: 502}}}
	s := &StatusSink{Forge: f, Backoff: time.Millisecond, TargetURL: "https://git.example.com/blob/main/%s"}
	if err := s.Post(context.Background(), record()); err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 3 {
		t.Fatalf("%d calls, want 3", len(f.calls))
	}
	st := f.calls[2]
	if st.State != forge.StatusSuccess || st.Context != "throughline/production/checkout" || st.SHA != strings.Repeat("a", 40) ||
		st.TargetURL != "https://git.example.com/blob/main/evidence/production/checkout/checkout-production-abababababab-1.json" {
		t.Fatalf("status %+v", st)
	}
	// A refusal is not retried.
	f = &flaky{fail: []error{&forge.APIError{Kind: forge.GitHub, Status: 422}}}
	s.Forge = f
	h := record()
	h.Decision, h.Reason = promotion.Halted, "image mismatch"
	if err := s.Post(context.Background(), h); err == nil || len(f.calls) != 1 || f.calls[0].State != forge.StatusFailure {
		t.Fatalf("err %v, %d calls", err, len(f.calls))
	}
	// A promotion waiting for its controller (nothing written to Git) is
	// pending, not failed, and links no evidence file.
	f = &flaky{}
	s.Forge = f
	w := record()
	w.Decision, w.Reason = promotion.Reconciling, "waiting: Kustomization/flux-system/checkout reports HealthCheckFailed"
	if err := s.Post(context.Background(), w); err != nil || len(f.calls) != 1 || f.calls[0].State != forge.StatusPending ||
		f.calls[0].Description != w.Reason || f.calls[0].TargetURL != "" {
		t.Fatalf("waiting: err %v, calls %+v", err, f.calls)
	}
}
