package breakglass

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestChangeNeverShowsSecretValues: a live edit of a Secret's value is
// listed (text, PR body, JSON and the evidence) with keyed digests only; its
// labels and other objects' values are shown as they are.
func TestChangeNeverShowsSecretValues(t *testing.T) {
	t.Parallel()
	const oldV, newV = "hunter2-plaintext", "NEWSECRET-plaintext"
	changes := []Change{
		{Object: "Secret prod/db", Path: "stringData.password", Before: oldV, Live: newV, Proposed: oldV, Manager: "kubectl-edit", Class: Permanent},
		{Object: "Secret prod/db", Path: "data", Before: map[string]any{"password": oldV}, Live: nil, Manager: "kubectl-edit", Class: Permanent},
		{Object: "Secret prod/db", Path: "metadata.labels.tier", Before: "db", Live: "database", Manager: "kubectl-edit", Class: Permanent},
		{Object: "Deployment.apps prod/web", Path: "spec.replicas", Before: 2, Live: 5, Manager: "kubectl-scale", Class: Permanent},
	}
	js, err := json.Marshal(changes)
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, c := range changes {
		text = append(text, c.String())
	}
	body := PullRequestBody(&Record{App: "web", Environment: "production"}, &WritebackResult{Changes: changes})
	all := strings.Join(text, "\n") + "\n" + string(js) + "\n" + body
	for _, needle := range []string{oldV, newV} {
		if strings.Contains(all, needle) {
			t.Errorf("a Secret value %q is shown:\n%s", needle, all)
		}
	}
	for _, want := range []string{"stringData.password: \"hmac:", `"database"`, "spec.replicas: 2 -> 5", "(Secret value not shown; keyed per run)"} {
		if !strings.Contains(all, want) {
			t.Errorf("lacks %q:\n%s", want, all)
		}
	}
	var back []Change
	if err := json.Unmarshal(js, &back); err != nil || len(back) != 4 || back[3].Object != "Deployment.apps prod/web" {
		t.Fatalf("the evidence's changes do not read back: %v %+v", err, back)
	}
}

// unkeyedGuess returns the candidate whose unkeyed sha256 (of its JSON or of
// its bytes, 8 to 64 hex digits) the text shows: what a reader of a PR body
// or of the evidence can test offline, a guess at a time.
func unkeyedGuess(text string, candidates ...string) string {
	for _, c := range candidates {
		j, _ := json.Marshal(c)
		for _, b := range [][]byte{j, []byte(c)} {
			sum := sha256.Sum256(b)
			if strings.Contains(text, hex.EncodeToString(sum[:])[:8]) {
				return c
			}
		}
	}
	return ""
}

// TestSecretDigestResistsGuesses: the digest shown for a changed Secret
// value cannot be tested against a guessed low-entropy value (it was the
// unkeyed sha256: "hunter2" confirmed in one try); equal values still show
// equal digests in one run, different ones differ.
func TestSecretDigestResistsGuesses(t *testing.T) {
	t.Parallel()
	guesses := []string{"password", "123456", "letmein", "hunter2", "changeme"}
	legacy := func(v string) string { // the scheme replaced: sha256: and 8 hex digits of the JSON
		j, _ := json.Marshal(v)
		sum := sha256.Sum256(j)
		return "sha256:" + hex.EncodeToString(sum[:])[:8] + " (Secret value not shown)"
	}
	if got := unkeyedGuess(legacy("hunter2"), guesses...); got != "hunter2" {
		t.Fatalf("the unkeyed digest %q does not confirm the guess (the test's attack is wrong): %q", legacy("hunter2"), got)
	}
	c := Change{Object: "Secret prod/db", Path: "stringData.password", Class: Permanent, Manager: "kubectl-edit"}
	shown := func(v any) string { return fmt.Sprint(c.shown(v)) }
	for _, v := range guesses {
		if got := unkeyedGuess(shown(v), guesses...); got != "" {
			t.Errorf("the digest shown for %q confirms the guess %q: %s", v, got, shown(v))
		}
	}
	if !strings.HasPrefix(shown("hunter2"), "hmac:") || !strings.Contains(shown("hunter2"), "(Secret value not shown; keyed per run)") {
		t.Errorf("shown as %q, want hmac:<hex> (Secret value not shown; keyed per run)", shown("hunter2"))
	}
	if a, b := shown("hunter2"), shown("hunter2"); a != b {
		t.Errorf("equal values show different digests in one run")
	}
	if a, b := shown(map[string]any{"a": "x"}), shown(map[string]any{"a": "x"}); a != b {
		t.Errorf("equal values show different digests in one run")
	}
	if shown("hunter2") == shown("hunter3") || shown("hunter2") == shown(map[string]any{"a": "hunter2"}) {
		t.Errorf("different values show one digest")
	}
	// The digest is package secretdigest's (its test shows another key, another
	// run, digests the same value differently).
	if !strings.HasPrefix(shown("hunter2"), secretDigest("hunter2")+" ") || len(secretDigest("x")) != len("hmac:")+12 {
		t.Errorf("shown %s, digest %s", shown("hunter2"), secretDigest("hunter2"))
	}
	// In the text of a change, in its JSON and in a PR body alike.
	c.Before, c.Live = "hunter2", "hunter2"
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	body := PullRequestBody(&Record{App: "web", Environment: "production"}, &WritebackResult{Changes: []Change{c}})
	for _, text := range []string{c.String(), string(js), body} {
		if got := unkeyedGuess(text, guesses...); got != "" {
			t.Errorf("confirms the guess %q: %s", got, text)
		}
		if strings.Count(text, shown("hunter2")) != 2 && strings.Count(text, strings.SplitN(shown("hunter2"), " ", 2)[0]) != 2 {
			t.Errorf("the equal before and live values do not show one digest: %s", text)
		}
	}
}

// TestSecretDigestReadBack: a change read back from JSON (the record the
// write-back committed, read by resume in another process for the
// evidence) shows the digests it was written with, not a digest of them
// under that process's key: the record, the PR body and the evidence
// agree.
func TestSecretDigestReadBack(t *testing.T) {
	t.Parallel()
	changes := []Change{
		{Object: "Secret prod/db", Path: "stringData.password", Before: "hunter2", Live: "hunter3", Proposed: "hunter2", Class: Permanent},
		{Object: "Secret prod/db", Path: "metadata.labels.tier", Before: "db", Live: "database", Class: Permanent},
	}
	js, err := json.Marshal(changes)
	if err != nil {
		t.Fatal(err)
	}
	var back []Change
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(js) {
		t.Errorf("read back and written again:\n%s\nwant\n%s", again, js)
	}
	if back[0].String() != changes[0].String() || back[1].String() != changes[1].String() {
		t.Errorf("read back: %s\n%s\nwant %s\n%s", back[0], back[1], changes[0], changes[1])
	}
	// The record written by the write-back, parsed by resume, makes
	// evidence with the record's digests.
	rec := resumedRecord(t)
	rec.Writeback.Classified = append(rec.Writeback.Classified, changes[0])
	yml, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := Parse("breakglass/production/web.yaml", yml)
	if err != nil {
		t.Fatal(err)
	}
	evidence, err := NewEvidence(parsed, Restoration{At: rec.Resume.At, Field: "spec.syncPolicy.automated", ResourceVersion: "99"}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	before, live := secretDigest("hunter2"), secretDigest("hunter3")
	for name, doc := range map[string][]byte{"record": yml, "evidence": evidence} {
		if n := strings.Count(string(doc), "hmac:"); n != 3 || strings.Count(string(doc), before) != 2 || strings.Count(string(doc), live) != 1 {
			t.Errorf("the %s shows %d digests, want before %s twice and live %s once:\n%s", name, n, before, live, doc)
		}
	}
}
