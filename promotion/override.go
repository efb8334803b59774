package promotion

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// MaxOverride is the longest a freeze override may last, from the time it
// is signed: an override is an escape hatch for one change, not a second
// policy.
const MaxOverride = 24 * time.Hour

// maxOverrideReason bounds an override's reason (the schema's maxLength).
const maxOverrideReason = 512

// Override is one approver's signed consent that this attempt goes into its
// target environment while the environment is closed (a freeze holds, or
// no window is open): the promotion approve --override-freeze commit. It
// covers freezes and windows alike: it names one attempt, not a closure.
//
// InputHash binds it to the attempt (OverrideInput.Hash): the promotion id,
// the approval inputs (digest, rendered hash, path, cluster, throughline's
// version), the reason and expiresAt. An override copied to another
// attempt, or left on an attempt whose render changed, does not count; nor
// does one whose reason or expiry was edited after it was signed.
type Override struct {
	Approver   string    `json:"approver"`
	Reason     string    `json:"reason"`
	InputHash  string    `json:"inputHash"`
	ExpiresAt  time.Time `json:"expiresAt"`
	ApprovedAt time.Time `json:"approvedAt"`
}

// Active reports whether o has not expired at t.
func (o Override) Active(t time.Time) bool { return t.Before(o.ExpiresAt) }

// OverrideInput is what a freeze override is bound to.
type OverrideInput struct {
	PromotionID string
	// Approval is the attempt's approval input; its ExpiresAt is the
	// override's.
	Approval ApprovalInput
	Reason   string
}

// OverrideInputFor is the override input of r's target as proposed, with
// reason and expiresAt.
func (r *Record) OverrideInputFor(version, reason string, expiresAt time.Time) OverrideInput {
	in := r.InputFor(version)
	in.ExpiresAt = expiresAt
	return OverrideInput{PromotionID: r.PromotionID, Approval: in, Reason: reason}
}

// Hash is sha256 over a version line, the promotion id, the approval
// input hash (which covers expiresAt) and the reason, one "name=value\n"
// line each.
func (in OverrideInput) Hash() string {
	var b strings.Builder
	b.WriteString("throughline-freeze-override/v1\n")
	for _, kv := range [][2]string{{"promotionId", in.PromotionID}, {"approval", in.Approval.Hash()}, {"reason", in.Reason}} {
		b.WriteString(kv[0] + "=" + strings.ReplaceAll(kv[1], "\n", " ") + "\n")
	}
	sum := sha256.Sum256([]byte(b.String()))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CheckOverrideReason says why reason cannot be an override's (nil: it
// can): required, one line of printable text, at most 512 bytes.
func CheckOverrideReason(reason string) error {
	switch {
	case strings.TrimSpace(reason) == "":
		return fmt.Errorf("a freeze override says why: the reason is required")
	case len(reason) > maxOverrideReason:
		return fmt.Errorf("the reason is %d bytes, at most %d", len(reason), maxOverrideReason)
	case strings.IndexFunc(reason, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return fmt.Errorf("the reason %q holds a control character: one line of text", reason)
	}
	return nil
}

// CheckOverrideLifetime says why an override signed at `at` cannot expire
// at expiresAt (nil: it can): after at, at most MaxOverride later.
func CheckOverrideLifetime(at, expiresAt time.Time) error {
	switch d := expiresAt.Sub(at); {
	case d <= 0:
		return fmt.Errorf("expires at %s, not after it was signed (%s)", stamp(expiresAt), stamp(at))
	case d > MaxOverride:
		return fmt.Errorf("expires at %s, %s after it was signed (%s): an override lasts at most %s", stamp(expiresAt),
			d.Round(time.Second), stamp(at), MaxOverride)
	}
	return nil
}

// AddOverride records approver's freeze override of r (before it is
// RECONCILING), bound to in (the target as rendered now) with reason, until
// expiresAt (at most MaxOverride after at). The state does not change.
// Overrides are kept in the order they were signed; one approver may renew
// an override, and every entry stays in the record.
func (r *Record) AddOverride(approver, reason string, in ApprovalInput, expiresAt, at time.Time) error {
	fail := func(why string) error {
		return &TransitionError{ID: r.PromotionID, From: r.State, To: r.State, Reason: "freeze override: " + why}
	}
	switch {
	case r.State != Candidate && r.State != Verified && r.State != Approved:
		return fail(fmt.Sprintf("the record is %s: an override is recorded before the merge is reconciled", r.State))
	case strings.TrimSpace(approver) == "":
		return fail("approver is missing")
	case in.RenderedHash != r.Target.RenderedHash:
		return fail(fmt.Sprintf("the target renders %s, the record proposed %s", in.RenderedHash, r.Target.RenderedHash))
	}
	if err := CheckOverrideReason(reason); err != nil {
		return fail(err.Error())
	}
	expiresAt, at = expiresAt.UTC().Truncate(time.Second), at.UTC().Truncate(time.Second)
	if err := CheckOverrideLifetime(at, expiresAt); err != nil {
		return fail(err.Error())
	}
	in.ExpiresAt = expiresAt
	h := OverrideInput{PromotionID: r.PromotionID, Approval: in, Reason: reason}.Hash()
	c := r.clone()
	r.Overrides = append(r.Overrides, Override{Approver: approver, Reason: reason, InputHash: h, ExpiresAt: expiresAt, ApprovedAt: at})
	if err := r.Validate(); err != nil {
		*r = *c
		return fail(err.Error())
	}
	return nil
}

// OverrideVoid says why o does not bind r as r's target renders now (in,
// its ExpiresAt ignored) ("" when it does): its input hash is another
// attempt's, another render's, or its reason or expiry changed after it
// was signed.
func (r *Record) OverrideVoid(o Override, in ApprovalInput) string {
	in.ExpiresAt = o.ExpiresAt
	if h := (OverrideInput{PromotionID: r.PromotionID, Approval: in, Reason: o.Reason}).Hash(); h != o.InputHash {
		return fmt.Sprintf("its input hash %s is not this attempt's (%s): it was made for another attempt or render, "+
			"or its reason or expiry changed after it was signed", o.InputHash, h)
	}
	return ""
}

// validateOverrides checks what the schema cannot: each override's times
// and reason. Whether it binds the record, who signed it and whether it
// is still active are the gates' to judge (gate.Overrides).
func (r *Record) validateOverrides(fail func(field, format string, args ...any) error) error {
	for i, o := range r.Overrides {
		field := fmt.Sprintf("overrides[%d]", i)
		switch {
		case strings.TrimSpace(o.Approver) == "":
			return fail(field+".approver", "required")
		case o.ApprovedAt.IsZero() || o.ExpiresAt.IsZero():
			return fail(field, "approvedAt and expiresAt are required")
		case !o.ExpiresAt.After(o.ApprovedAt):
			return fail(field+".expiresAt", "%s is not after approvedAt", stamp(o.ExpiresAt))
		}
		if err := CheckOverrideReason(o.Reason); err != nil {
			return fail(field+".reason", "%w", err)
		}
		for j := range i {
			if r.Overrides[j] == o {
				return fail(field, "repeats overrides[%d]", j)
			}
		}
	}
	return nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
