package promotion

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/render"
)

var (
	digest  = "sha256:" + strings.Repeat("ab", 32)
	digest2 = "sha256:" + strings.Repeat("cd", 32)
	hashA   = "sha256:" + strings.Repeat("1", 64)
	hashB   = "sha256:" + strings.Repeat("2", 64)
	rev1    = strings.Repeat("a", 40)
	rev2    = strings.Repeat("b", 40)
	t0      = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
)

func target() Target {
	return Target{Environment: "production", Path: "apps/checkout/overlays/production", Cluster: "prod-eu-1",
		RenderedHash: hashA, BaseRenderedHash: hashB, Renderer: "v0.1.0"}
}

func candidate(t *testing.T) *Record {
	t.Helper()
	r, err := NewCandidate("checkout", 1, Artifact{Image: "ghcr.io/throughline-dev/checkout:1.5.0@" + digest, Digest: digest, SourceCommit: rev1}, target(), t0, "ci")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func evidence() VerifiedIn {
	return VerifiedIn{Environment: "staging", DesiredRevision: rev2, ObservedRevision: rev2, RenderedHash: hashB, RuntimeEvidence: "evidence/staging/checkout/x.json"}
}

func accepted(t *testing.T) *Record {
	t.Helper()
	r := candidate(t)
	must(t, r.Verify(evidence(), t0.Add(time.Minute), "notifier"))
	must(t, r.Approve("alice", r.InputFor("v0.1.0"), t0.Add(24*time.Hour), t0.Add(2*time.Minute)))
	must(t, r.Reconcile(rev1, t0.Add(3*time.Minute), "ci"))
	must(t, r.Accept(rev1, "evidence/production/checkout/x.json", t0.Add(4*time.Minute), "notifier"))
	return r
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRoundTripEveryState(t *testing.T) {
	t.Parallel()
	r := accepted(t)
	data, err := r.Marshal()
	must(t, err)
	back, err := Parse("promotion/checkout/production.yaml", data)
	must(t, err)
	if back.State != Accepted || len(back.History) != 5 || back.Approval.Approver != "alice" {
		t.Fatalf("round trip lost data: %+v", back)
	}
	again, err := back.Marshal()
	must(t, err)
	if string(again) != string(data) {
		t.Fatalf("not stable:\n%s\n---\n%s", data, again)
	}
}

// TestRoundTripYAML11Words writes records whose names and actors are words
// YAML 1.1 reads as something else than a string (Parse reads records as
// Kubernetes does; the encoder writes YAML 1.2, which leaves them plain):
// an app called "yes" or an approver "n" could never be written before
// (Marshal refused its own output as not round-tripping).
func TestRoundTripYAML11Words(t *testing.T) {
	t.Parallel()
	for _, w := range []string{"yes", "no", "on", "off", "y", "n", "Y", "N", "Yes", "OFF", "true", "null", "1", "0x1f", "1e3"} {
		t.Run(w, func(t *testing.T) {
			t.Parallel()
			app := strings.ToLower(w)
			tg := target()
			tg.Environment, tg.Path = app, "apps/"+app+"/overlays/"+app
			r, err := NewCandidate(app, 1, Artifact{Image: "ghcr.io/throughline-dev/checkout:1.5.0@" + digest, Digest: digest, SourceCommit: rev1}, tg, t0, w)
			must(t, err)
			must(t, r.Verify(evidence(), t0.Add(time.Minute), w))
			must(t, r.Approve(w, r.InputFor("v0.1.0"), t0.Add(24*time.Hour), t0.Add(2*time.Minute)))
			data, err := r.Marshal()
			if err != nil {
				t.Fatalf("app, environment and actor %q: %v", w, err)
			}
			back, err := Parse(RecordPath(app, app), data)
			must(t, err)
			if back.App != app || back.Target.Environment != app || back.Approval.Approver != w || back.History[0].By != w {
				t.Fatalf("read back app %q, environment %q, approver %q, by %q from\n%s", back.App, back.Target.Environment,
					back.Approval.Approver, back.History[0].By, data)
			}
		})
	}
}

func TestStateMachine(t *testing.T) {
	t.Parallel()
	r := candidate(t)
	// No skipped state.
	if err := r.Approve("alice", r.InputFor("v0.1.0"), t0.Add(time.Hour), t0); err == nil {
		t.Fatal("CANDIDATE -> APPROVED accepted")
	}
	if err := r.Reconcile(rev1, t0, "ci"); err == nil {
		t.Fatal("CANDIDATE -> RECONCILING accepted")
	}
	// No transition without its evidence.
	bad := evidence()
	bad.RuntimeEvidence = ""
	if err := r.Verify(bad, t0, "x"); err == nil || r.State != Candidate {
		t.Fatalf("VERIFIED without runtime evidence: %v, state %s", err, r.State)
	}
	bad = evidence()
	bad.ObservedRevision = "main"
	if err := r.Verify(bad, t0, "x"); err == nil {
		t.Fatal("VERIFIED with an observed revision that is not a commit id")
	}
	bad = evidence()
	bad.Environment = "production"
	if err := r.Verify(bad, t0, "x"); err == nil || r.VerifiedIn != nil {
		t.Fatalf("evidence from the target itself accepted (%v), record changed: %+v", err, r.VerifiedIn)
	}
	must(t, r.Verify(evidence(), t0, "x"))
	in := r.InputFor("v0.1.0")
	in.RenderedHash = hashB
	if err := r.Approve("alice", in, t0.Add(time.Hour), t0); err == nil {
		t.Fatal("approval of another rendered hash accepted")
	}
	if err := r.Approve("", r.InputFor("v0.1.0"), t0.Add(time.Hour), t0); err == nil {
		t.Fatal("approval without approver accepted")
	}
	must(t, r.Approve("alice", r.InputFor("v0.1.0"), t0.Add(time.Hour), t0))
	must(t, r.Reconcile(rev1, t0, "ci"))
	if err := r.Accept("HEAD", "ev", t0, "n"); err == nil {
		t.Fatal("ACCEPTED with an observed revision that is not a commit id")
	}
	if err := r.Accept(rev2, "", t0, "n"); err == nil {
		t.Fatal("ACCEPTED without runtime evidence")
	}
	must(t, r.Stop(Halted, "live imageID differs", t0, "n"))
	// Final: a fix makes a new candidate.
	var te *TransitionError
	if err := r.Stop(Rejected, "again", t0, "n"); !errors.As(err, &te) {
		t.Fatalf("transition out of HALTED: %v", err)
	}
	if err := candidate(t).Stop(Rejected, "", t0, "n"); err == nil {
		t.Fatal("REJECTED without reason accepted")
	}
}

func TestCanTransition(t *testing.T) {
	t.Parallel()
	all := []State{Candidate, Verified, Approved, Reconciling, Accepted, Halted, Rejected}
	legal := map[[2]State]bool{
		{Candidate, Verified}: true, {Verified, Approved}: true, {Approved, Reconciling}: true, {Reconciling, Accepted}: true,
	}
	for _, from := range all {
		for _, to := range all {
			want := legal[[2]State{from, to}] || (!Terminal(from) && (to == Halted || to == Rejected))
			if got := CanTransition(from, to); got != want {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, want)
			}
		}
	}
}

// TestParseBadInput: each a hand-edited record the parser must refuse,
// naming the file and the field (Validate's field, or the JSON pointer in
// the schema's message: the golden file holds every message).
func TestParseBadInput(t *testing.T) {
	t.Parallel()
	good, err := accepted(t).Marshal()
	must(t, err)
	cand, err := candidate(t).Marshal()
	must(t, err)
	cases := []struct {
		name, data, field string
	}{
		{"illegal state jump", strings.Replace(string(cand), "\nstate: CANDIDATE\n", "\nstate: APPROVED\n", 1), ""},
		{"illegal jump in history", strings.Replace(string(good), "- state: VERIFIED\n", "- state: RECONCILING\n", 1), "history[1].state"},
		{"bad digest", strings.Replace(string(good), "digest: "+digest, "digest: sha256:ABC", 1), ""},
		{"missing field", strings.Replace(string(good), "  sourceCommit: "+rev1+"\n", "", 1), ""},
		{"future schemaVersion", strings.Replace(string(good), "schemaVersion: promotion/v1", "schemaVersion: promotion/v2", 1), "schemaVersion"},
		{"unknown field", string(good) + "extra: 1\n", ""},
		{"two documents", string(good) + "---\n" + string(good), ""},
		{"state not history", strings.Replace(string(good), "\nstate: ACCEPTED\n", "\nstate: RECONCILING\n", 1), "state"},
		{"promotionId mismatch", strings.Replace(string(good), "attempt: 1", "attempt: 2", 1), "promotionId"},
		{"empty", "", ""},
		{"not yaml", "{", ""},
	}
	record := golden.ErrorLines(t, "testdata/parse-bad-input.golden", len(cases))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("promotion/checkout/production.yaml", []byte(tc.data))
			var re *RecordError
			if !errors.As(err, &re) {
				t.Fatalf("got %v, want a *RecordError", err)
			}
			if re.File != "promotion/checkout/production.yaml" || re.Field != tc.field {
				t.Fatalf("error %q names file %q field %q, want the file and field %q", err, re.File, re.Field, tc.field)
			}
			record(tc.name, err)
		})
	}
	_, err = Parse("f", []byte(strings.Replace(string(good), "schemaVersion: promotion/v1", "schemaVersion: promotion/v2", 1)))
	if !errors.Is(err, ErrSchemaVersion) {
		t.Fatalf("future schemaVersion: %v does not wrap ErrSchemaVersion", err)
	}
}

func TestMarshalRefusesInvalid(t *testing.T) {
	t.Parallel()
	r := candidate(t)
	r.State = Verified // without evidence
	if _, err := r.Marshal(); err == nil {
		t.Fatal("an invalid record was encoded")
	}
}

func TestAttemptKey(t *testing.T) {
	t.Parallel()
	r := candidate(t)
	k := r.Key()
	if k.ID() != "checkout-production-abababababab-1" || r.PromotionID != k.ID() {
		t.Fatalf("id %q", k.ID())
	}
	if k.Branch() != "throughline/promote/checkout/production/abababababab-1" {
		t.Fatalf("branch %q", k.Branch())
	}
	if !strings.HasPrefix(k.Branch(), strings.TrimSuffix(BranchGlob("checkout", "production", digest), "*")) {
		t.Fatalf("glob %q does not match %q", BranchGlob("checkout", "production", digest), k.Branch())
	}
	if !r.SameAttempt(r.Artifact, target()) {
		t.Fatal("the same request is not the same attempt")
	}
	for name, mod := range map[string]func(*Target){
		"cluster":    func(t *Target) { t.Cluster = "prod-us-1" },
		"renderer":   func(t *Target) { t.Renderer = "v0.2.0" },
		"parameters": func(t *Target) { t.RenderedHash = hashB },
		"path":       func(t *Target) { t.Path = "x" },
	} {
		tg := target()
		mod(&tg)
		if r.SameAttempt(r.Artifact, tg) {
			t.Errorf("a changed %s is the same attempt", name)
		}
	}
	// A new attempt replaces the record only as a new CANDIDATE.
	next, err := NewCandidate("checkout", 2, r.Artifact, target(), t0, "ci")
	must(t, err)
	must(t, CheckUpdate(accepted(t), next))
	must(t, CheckUpdate(nil, r))
	v := candidate(t)
	must(t, v.Verify(evidence(), t0, "x"))
	must(t, CheckUpdate(candidate(t), v))
	if err := CheckUpdate(v, candidate(t)); err == nil {
		t.Fatal("a shortened history was accepted")
	}
	moved := candidate(t)
	moved.Target.Cluster = "elsewhere"
	if err := CheckUpdate(candidate(t), moved); err == nil {
		t.Fatal("a changed target under the same attempt key was accepted")
	}
}

func TestApprovalHash(t *testing.T) {
	t.Parallel()
	r := candidate(t)
	must(t, r.Verify(evidence(), t0, "x"))
	exp := t0.Add(time.Hour)
	must(t, r.Approve("alice", r.InputFor("v0.1.0"), exp, t0))
	in := r.InputFor("v0.1.0")
	in.ExpiresAt = exp
	if r.Approval.InputHash != in.Hash() {
		t.Fatal("stored hash is not the input hash")
	}
	// Every input changes the hash.
	base := in.Hash()
	for name, mod := range map[string]func(*ApprovalInput){
		"digest": func(i *ApprovalInput) { i.Digest = digest2 }, "renderedHash": func(i *ApprovalInput) { i.RenderedHash = hashB },
		"path": func(i *ApprovalInput) { i.Path = "p" }, "cluster": func(i *ApprovalInput) { i.Cluster = "c" },
		"version": func(i *ApprovalInput) { i.Version = "v9" }, "expiresAt": func(i *ApprovalInput) { i.ExpiresAt = exp.Add(time.Second) },
	} {
		c := in
		mod(&c)
		if c.Hash() == base {
			t.Errorf("%s does not change the input hash", name)
		}
	}
	if why := r.ApprovalVoid(r.InputFor("v0.1.0"), hashB, t0.Add(time.Minute)); why != "" {
		t.Fatalf("valid approval void: %s", why)
	}
	if why := r.ApprovalVoid(r.InputFor("v0.1.0"), hashB, exp); !strings.Contains(why, "expired") {
		t.Fatalf("expired: %q", why)
	}
	other := r.InputFor("v0.1.0")
	other.RenderedHash = hashB
	if why := r.ApprovalVoid(other, hashB, t0); !strings.Contains(why, "does not match") {
		t.Fatalf("hash mismatch: %q", why)
	}
	if why := r.ApprovalVoid(r.InputFor("v0.2.0"), hashB, t0); !strings.Contains(why, "does not match") {
		t.Fatalf("new renderer: %q", why)
	}
	if why := r.ApprovalVoid(r.InputFor("v0.1.0"), hashA, t0); !strings.Contains(why, "moved on") {
		t.Fatalf("moved on: %q", why)
	}
}

func obj(apiVersion, kind, ns, name string, spec map[string]any) render.Object {
	md := map[string]any{"name": name}
	if ns != "" {
		md["namespace"] = ns
	}
	return render.Object{Map: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md, "spec": spec}}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	deploy := func(ns, image string, replicas int, cpu string, secret string) render.Object {
		return obj("apps/v1", "Deployment", ns, "checkout", map[string]any{
			"replicas": replicas,
			"template": map[string]any{"spec": map[string]any{
				"serviceAccountName": "checkout",
				"containers": []any{map[string]any{"name": "api", "image": image,
					"resources": map[string]any{"requests": map[string]any{"cpu": cpu}},
					"env":       []any{map[string]any{"name": "DB", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": secret, "key": "k"}}}}}},
			}},
		})
	}
	ing := func(ns, host string) render.Object {
		return obj("networking.k8s.io/v1", "Ingress", ns, "checkout", map[string]any{"rules": []any{map[string]any{"host": host}}})
	}
	img1, img2 := "app@"+digest, "app@"+digest2
	// Only the digest.
	cs := Classify([]render.Object{deploy("prod", img1, 6, "1", "db-prod")}, []render.Object{deploy("prod", img2, 6, "1", "db-prod")})
	if len(cs) != 1 || cs[0].Class != ClassArtifact || cs[0].Field != "spec.template.spec.containers[0].image" {
		t.Fatalf("digest only: %v", cs)
	}
	// Everything.
	cs = Classify(
		[]render.Object{deploy("prod", img1, 6, "1", "db-prod"), ing("prod", "checkout.example.com")},
		[]render.Object{deploy("prod", img2, 2, "250m", "db-staging"), ing("prod", "checkout.staging.example.test"),
			obj("v1", "ServiceAccount", "prod", "extra", nil), obj("v1", "PersistentVolumeClaim", "prod", "data", nil)})
	got := Classes(cs)
	want := map[Class]int{ClassArtifact: 1, ClassCapacity: 2, ClassRouting: 1, ClassBoundary: 2, ClassPermission: 1}
	for c, n := range want {
		if got[c] != n {
			t.Errorf("%s: %d changes, want %d (%v)", c, got[c], n, cs)
		}
	}
	// A namespace move is one boundary change, not an add and a remove.
	cs = Classify([]render.Object{deploy("prod", img1, 6, "1", "s")}, []render.Object{deploy("staging", img1, 6, "1", "s")})
	if len(cs) != 1 || cs[0].Class != ClassBoundary || cs[0].Field != "metadata.namespace" {
		t.Fatalf("namespace move: %v", cs)
	}
}

func FuzzParse(f *testing.F) {
	r, err := NewCandidate("checkout", 1, Artifact{Image: "a@" + digest, Digest: digest, SourceCommit: rev1}, target(), t0, "ci")
	if err != nil {
		f.Fatal(err)
	}
	data, err := r.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	// A record with a freeze override (its reason is free text).
	if err := r.Verify(evidence(), t0, "x"); err != nil {
		f.Fatal(err)
	}
	if err := r.AddOverride("alice", "hotfix", r.InputFor("v0.1.0"), t0.Add(time.Hour), t0); err != nil {
		f.Fatal(err)
	}
	if data, err = r.Marshal(); err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte("schemaVersion: promotion/v2\n"))
	f.Add([]byte("{}"))
	f.Add([]byte("- a\n- b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := Parse("fuzz.yaml", data)
		if err != nil {
			var re *RecordError
			if !errors.As(err, &re) {
				t.Fatalf("error is not a *RecordError: %v", err)
			}
			return
		}
		// Whatever parses must encode and parse back to the same record.
		out, err := rec.Marshal()
		if err != nil {
			t.Fatalf("parsed record does not encode: %v", err)
		}
		if _, err := Parse("fuzz.yaml", out); err != nil {
			t.Fatalf("encoded record does not parse: %v", err)
		}
	})
}

// TestExampleRecords: every record under examples/ parses, and the staging
// record's hashes are the example's own.
func TestExampleRecords(t *testing.T) {
	t.Parallel()
	root := "../examples/gitops-env"
	for _, f := range []string{"promotion/checkout/staging.yaml"} {
		data, err := os.ReadFile(filepath.Join(root, f))
		must(t, err)
		r, err := Parse(f, data)
		must(t, err)
		in := r.InputFor(r.Target.Renderer)
		in.ExpiresAt = r.Approval.ExpiresAt
		if in.Hash() != r.Approval.InputHash {
			t.Errorf("%s: approval.inputHash is not the hash of its inputs", f)
		}
	}
	pdata, err := os.ReadFile(filepath.Join(root, PolicyFile))
	must(t, err)
	p, err := ParsePolicy(PolicyFile, pdata)
	must(t, err)
	if p.Cluster("production") != "prod-eu-1" || p.Cluster("dev") != "dev-eu-1" || p.Cluster("qa") != "qa" || p.Allows("replicas") || p.AllowBoundary() {
		t.Fatalf("policy %+v", p)
	}
}

// TestEntered: the first entry into a state, and none for a state the
// record never reached.
func TestEntered(t *testing.T) {
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	r := &Record{History: []Transition{{State: Candidate, At: at, By: "ci"}, {State: Verified, At: at.Add(time.Minute), By: "verify"},
		{State: Verified, At: at.Add(2 * time.Minute), By: "again"}}}
	for _, tc := range []struct {
		state State
		ok    bool
		by    string
	}{{Candidate, true, "ci"}, {Verified, true, "verify"}, {Accepted, false, ""}} {
		h, ok := r.Entered(tc.state)
		if ok != tc.ok || h.By != tc.by {
			t.Errorf("Entered(%s) = %+v, %v; want by %q, %v", tc.state, h, ok, tc.by, tc.ok)
		}
	}
}

// TestReconcileDeadline: the notifier's halt and the web view's deadline
// are one rule: the deadline after the record's last RECONCILING entry
// (a retried reconcile restarts it), none without a positive deadline or
// such an entry.
func TestReconcileDeadline(t *testing.T) {
	t.Parallel()
	r := candidate(t)
	if _, _, ok := r.ReconcileDeadline(time.Hour); ok {
		t.Error("a CANDIDATE has a deadline")
	}
	must(t, r.Verify(evidence(), t0.Add(time.Minute), "notifier"))
	must(t, r.Approve("alice", r.InputFor("v0.1.0"), t0.Add(24*time.Hour), t0.Add(2*time.Minute)))
	must(t, r.Reconcile(rev1, t0.Add(3*time.Minute), "ci"))
	later := *r
	later.History = append(append([]Transition(nil), r.History...), Transition{State: Reconciling, At: t0.Add(10 * time.Minute), By: "ci"})
	for _, tc := range []struct {
		name      string
		rec       *Record
		d         time.Duration
		since, at time.Time
		ok        bool
	}{
		{"from the RECONCILING entry", r, time.Hour, t0.Add(3 * time.Minute), t0.Add(63 * time.Minute), true},
		{"from the last one", &later, time.Hour, t0.Add(10 * time.Minute), t0.Add(70 * time.Minute), true},
		{"no deadline", r, 0, time.Time{}, time.Time{}, false},
		{"a negative deadline", r, -time.Hour, time.Time{}, time.Time{}, false},
	} {
		since, at, ok := tc.rec.ReconcileDeadline(tc.d)
		if !since.Equal(tc.since) || !at.Equal(tc.at) || ok != tc.ok {
			t.Errorf("%s: %s, %s, %v; want %s, %s, %v", tc.name, since, at, ok, tc.since, tc.at, tc.ok)
		}
	}
}
