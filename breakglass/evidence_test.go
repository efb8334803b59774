package breakglass

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func resumedRecord(t testing.TB) *Record {
	t.Helper()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	return &Record{SchemaVersion: SchemaVersion, App: "web", Environment: "production", Controller: ArgoCD, State: Resumed,
		Object:   Ref{APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Namespace: "argocd", Name: "web-production", ResourceVersion: "7"},
		Operator: "alice", Ticket: "INC-1", PausedAt: now, ExpiresAt: now.Add(time.Hour), SourceRevision: strings.Repeat("a", 40),
		Objects: []LiveObject{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "prod", Name: "web", ResourceVersion: "41"}},
		Writeback: &Writeback{Branch: "throughline/breakglass/web/production/inc-1", Commit: strings.Repeat("b", 40),
			Classified: []Change{{Object: "Deployment.apps prod/web", Path: "spec.replicas", Before: 2, Live: 5, Manager: "kube-controller-manager", Class: OtherWriter}}},
		Resume: &Resume{At: now.Add(30 * time.Minute), By: "alice", WritebackMerged: strings.Repeat("c", 40), ObservedFor: "30s"},
	}
}

func TestEvidenceRoundTrip(t *testing.T) {
	t.Parallel()
	rec := resumedRecord(t)
	restored := Restoration{At: rec.Resume.At, Field: "spec.syncPolicy.automated", ResourceVersion: "99"}
	data, err := NewEvidence(rec, restored).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	file := EvidencePath("production", "web", rec.PausedAt)
	if file != "breakglass/production/web.evidence/20261129T120000Z.json" {
		t.Fatalf("path %s", file)
	}
	e, err := ParseEvidence(file, data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if e.BeforePause.SourceRevision != rec.SourceRevision || e.BeforePause.ObjectResourceVersion != "7" || len(e.BeforePause.Objects) != 1 ||
		e.BeforePause.Objects[0].ResourceVersion != "41" || !e.ManualChange.WritebackRan || len(e.ManualChange.Changes) != 1 ||
		e.ManualChange.Changes[0].Class != OtherWriter || e.Writeback.Commit != rec.Writeback.Commit || e.Writeback.MergedInto != rec.Resume.WritebackMerged ||
		!e.Resume.At.Equal(rec.Resume.At) || e.Revocation.Restored != "spec.syncPolicy.automated" || e.Revocation.ObjectResourceVersion != "99" ||
		!e.Revocation.NoFlapping || e.Revocation.ObservedFor != "30s" {
		t.Fatalf("read back %+v", e)
	}

	// A forced resume without a write-back, not watched: valid, and it says
	// that nobody looked and nothing was proven.
	rec.Writeback, rec.Resume.Force, rec.Resume.Reason, rec.Resume.WritebackMerged, rec.Resume.ObservedFor = nil, true, "reverted by hand", "", ""
	data2, err := NewEvidence(rec, restored).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if e, err := ParseEvidence(file, data2); err != nil || e.ManualChange.WritebackRan || e.Writeback != nil || e.Revocation.NoFlapping {
		t.Fatalf("forced: %+v %v", e, err)
	}

	edit := func(f func(m map[string]any)) string {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	sub := func(m map[string]any, k string) map[string]any { return m[k].(map[string]any) }
	for name, bad := range map[string]string{
		"unknown field": edit(func(m map[string]any) { m["extra"] = 1 }),
		"wrong version": edit(func(m map[string]any) { m["schemaVersion"] = "breakglass-evidence/v0" }),
		"trailing data": string(data) + "{}",
		"not merged":    edit(func(m map[string]any) { delete(sub(m, "writeback"), "mergedInto") }),
		"no write-back": edit(func(m map[string]any) { m["writeback"] = nil }),
		"bad class": edit(func(m map[string]any) {
			sub(m, "manualChange")["changes"].([]any)[0].(map[string]any)["class"] = "fine"
		}),
		"flapping but ok":   edit(func(m map[string]any) { sub(m, "revocation")["flapping"] = []any{"Deployment prod/web: 3 writes"} }),
		"no restore time":   edit(func(m map[string]any) { delete(sub(m, "revocation"), "reconciliationRestoredAt") }),
		"resumed pre-pause": edit(func(m map[string]any) { sub(m, "resume")["at"] = "2026-11-29T11:00:00Z" }),
		"unparsable":        "{",
	} {
		if _, err := ParseEvidence(file, []byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
