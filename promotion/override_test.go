package promotion

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/internal/golden"
)

// verified is the candidate VERIFIED.
func verified(t *testing.T) *Record {
	t.Helper()
	r := candidate(t)
	must(t, r.Verify(evidence(), t0, "x"))
	return r
}

// TestOverrideHash: the hash is recomputed here independently (the lines
// as docs/promotion.md writes them), and every input changes it.
func TestOverrideHash(t *testing.T) {
	t.Parallel()
	r := verified(t)
	exp := t0.Add(2 * time.Hour)
	in := r.OverrideInputFor("v0.1.0", "hotfix", exp)
	ap := r.InputFor("v0.1.0")
	ap.ExpiresAt = exp
	text := "throughline-freeze-override/v1\npromotionId=" + r.PromotionID + "\napproval=" + ap.Hash() + "\nreason=hotfix\n"
	sum := sha256.Sum256([]byte(text))
	if want := "sha256:" + hex.EncodeToString(sum[:]); in.Hash() != want {
		t.Fatalf("hash %s, recomputed %s", in.Hash(), want)
	}
	base := in.Hash()
	for name, mod := range map[string]func(*OverrideInput){
		"promotionId": func(i *OverrideInput) { i.PromotionID += "2" }, "reason": func(i *OverrideInput) { i.Reason = "hotfix!" },
		"expiresAt":    func(i *OverrideInput) { i.Approval.ExpiresAt = exp.Add(time.Second) },
		"renderedHash": func(i *OverrideInput) { i.Approval.RenderedHash = hashB }, "digest": func(i *OverrideInput) { i.Approval.Digest = digest2 },
		"version": func(i *OverrideInput) { i.Approval.Version = "v9" },
	} {
		c := in
		mod(&c)
		if c.Hash() == base {
			t.Errorf("%s does not change the override hash", name)
		}
	}
	if in.Approval.Hash() == base {
		t.Fatal("an override hash is an approval hash: one could pass for the other")
	}
}

// TestAddOverride: AddOverride records a bound override without changing
// the state, and refuses what no override may be (the wording in the
// golden file).
func TestAddOverride(t *testing.T) {
	t.Parallel()
	r := verified(t)
	must(t, r.AddOverride("alice", "hotfix for the outage", r.InputFor("v0.1.0"), t0.Add(2*time.Hour), t0))
	o := r.Overrides[0]
	if r.State != Verified || o.Approver != "alice" || !o.ExpiresAt.Equal(t0.Add(2*time.Hour)) ||
		o.InputHash != r.OverrideInputFor("v0.1.0", o.Reason, o.ExpiresAt).Hash() || r.OverrideVoid(o, r.InputFor("v0.1.0")) != "" {
		t.Fatalf("override %s %+v", r.State, r.Overrides)
	}
	data, err := r.Marshal()
	must(t, err)
	back, err := Parse("x.yaml", data)
	must(t, err)
	if len(back.Overrides) != 1 || back.Overrides[0] != o {
		t.Fatalf("round trip: %+v", back.Overrides)
	}
	if why := back.OverrideVoid(o, back.InputFor("v0.2.0")); why == "" {
		t.Fatal("an override binds another throughline version's render")
	}
	record := golden.ErrorLines(t, "testdata/add-override.golden", 7)
	other := r.InputFor("v0.1.0")
	other.RenderedHash = hashB
	for _, tc := range []struct {
		name, approver, reason string
		in                     ApprovalInput
		expires                time.Time
		state                  State
	}{
		{"no reason", "alice", " ", r.InputFor("v0.1.0"), t0.Add(time.Hour), Verified},
		{"a reason of two lines", "alice", "hotfix\napproved: everyone", r.InputFor("v0.1.0"), t0.Add(time.Hour), Verified},
		{"a reason too long", "alice", strings.Repeat("x", 513), r.InputFor("v0.1.0"), t0.Add(time.Hour), Verified},
		{"expires before it is signed", "alice", "hotfix", r.InputFor("v0.1.0"), t0.Add(-time.Minute), Verified},
		{"expires after a day", "alice", "hotfix", r.InputFor("v0.1.0"), t0.Add(MaxOverride + time.Second), Verified},
		{"another render", "alice", "hotfix", other, t0.Add(time.Hour), Verified},
		{"a record already reconciling", "alice", "hotfix", r.InputFor("v0.1.0"), t0.Add(time.Hour), Reconciling},
	} {
		c := verified(t)
		if tc.state == Reconciling {
			must(t, c.Approve("bob", c.InputFor("v0.1.0"), t0.Add(time.Hour), t0))
			must(t, c.Reconcile(rev1, t0, "ci"))
		}
		err := c.AddOverride(tc.approver, tc.reason, tc.in, tc.expires, t0)
		var te *TransitionError
		if !errors.As(err, &te) || len(c.Overrides) != 0 {
			t.Fatalf("%s: %v (%d overrides), want a transition error and none recorded", tc.name, err, len(c.Overrides))
		}
		record(tc.name, err)
	}
}

// TestOverrideHandEdited: a record whose override was edited into what
// AddOverride never writes does not parse, naming the field; one whose
// hash no longer binds it parses (the gates refuse it, by rule
// override-binding, naming the attempt).
func TestOverrideHandEdited(t *testing.T) {
	t.Parallel()
	r := verified(t)
	must(t, r.AddOverride("alice", "hotfix", r.InputFor("v0.1.0"), t0.Add(time.Hour), t0))
	for _, tc := range []struct {
		name, field string
		edit        func(o *Override)
	}{
		{"no approver", "overrides[0].approver", func(o *Override) { o.Approver = " " }},
		{"expiry before approval", "overrides[0].expiresAt", func(o *Override) { o.ExpiresAt = o.ApprovedAt.Add(-time.Second) }},
		{"a control character in the reason", "overrides[0].reason", func(o *Override) { o.Reason = "ok\x1b[2K" }},
	} {
		c := r.clone()
		tc.edit(&c.Overrides[0])
		err := c.Validate()
		var re *RecordError
		if !errors.As(err, &re) || re.Field != tc.field {
			t.Errorf("%s: %v, want a record error on %s", tc.name, err, tc.field)
		}
	}
	c := r.clone()
	c.Overrides = append(c.Overrides, c.Overrides[0])
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "repeats overrides[0]") {
		t.Errorf("a repeated override: %v", err)
	}
	c = r.clone()
	c.Overrides[0].Reason = "edited"
	must(t, c.Validate())
	if why := c.OverrideVoid(c.Overrides[0], c.InputFor("v0.1.0")); !strings.Contains(why, "is not this attempt's") {
		t.Errorf("an edited reason still binds: %q", why)
	}
}
