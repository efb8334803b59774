package promote

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/window"
)

// longFreeze is a freeze of production from an hour before now to two
// days after.
func longFreeze(now time.Time) map[string]any {
	return map[string]any{"freezes": []any{map[string]any{"name": "year-end", "from": now.Add(-time.Hour).UTC().Format(time.RFC3339),
		"until": now.Add(48 * time.Hour).UTC().Format(time.RFC3339), "reason": "the shops' busiest weeks"}}}
}

// override records k's freeze override of the production attempt, for
// lifetime from now.
func (f *fixture) override(k sshkey.Key, now time.Time, lifetime time.Duration) (*Transition, error) {
	return Override(context.Background(), f.as(k), OverrideRequest{App: "checkout", To: "production", Reason: "hotfix for the checkout outage",
		Expires: now.Add(lifetime), Now: now, Renderer: renderer})
}

// handOverride commits on branch, as git itself would for signer (nil:
// unsigned), the record with an override naming approver written by hand:
// bound to the attempt unless edit changes it (edit may also change the
// work tree).
func (f *fixture) handOverride(branch string, signer *sshkey.Key, approver string, now time.Time, edit func(r *promotion.Record, o *promotion.Override)) {
	f.t.Helper()
	f.git("checkout", "-q", branch)
	file := promotion.RecordPath("checkout", "production")
	rec, err := promotion.Parse(file, []byte(f.read(file)))
	must(f.t, err)
	o := promotion.Override{Approver: approver, Reason: "by hand", ExpiresAt: now.Add(time.Hour).UTC().Truncate(time.Second),
		ApprovedAt: now.UTC().Truncate(time.Second)}
	o.InputHash = rec.OverrideInputFor(renderer, o.Reason, o.ExpiresAt).Hash()
	if edit != nil {
		edit(rec, &o)
	}
	rec.Overrides = append([]promotion.Override{o}, rec.Overrides...)
	data, err := rec.Marshal()
	must(f.t, err)
	f.write(map[string]string{file: string(data)})
	f.commitSigned(signer, "override")
	f.git("checkout", "-q", "main")
}

// editOverride commits on branch, as signer (nil: unsigned), the record
// with its override i changed by edit (the input hash left as it was).
func (f *fixture) editOverride(branch string, signer *sshkey.Key, i int, edit func(o *promotion.Override)) {
	f.t.Helper()
	f.git("checkout", "-q", branch)
	file := promotion.RecordPath("checkout", "production")
	rec, err := promotion.Parse(file, []byte(f.read(file)))
	must(f.t, err)
	edit(&rec.Overrides[i])
	data, err := rec.Marshal()
	must(f.t, err)
	f.write(map[string]string{file: string(data)})
	f.commitSigned(signer, "edit the override")
	f.git("checkout", "-q", "main")
}

// frozenApproved is a signed fixture (minApprovals) whose production
// attempt alice (and bob for 2) approved, then production frozen on main
// for two days.
func frozenApproved(t *testing.T, minApprovals string, proposer func(k keys) *sshkey.Key, now time.Time) (*fixture, keys, *Proposal) {
	t.Helper()
	f, k := signedFixture(t, minApprovals)
	p := f.verified(proposer(k))
	approvers := []sshkey.Key{k.bob}
	if minApprovals == "2" {
		approvers = append(approvers, k.alice)
	}
	for _, a := range approvers {
		_, err := f.approve(a)
		must(t, err)
	}
	f.closeProduction(longFreeze(now))
	f.commit("production frozen for the year end")
	return f, k, p
}

func noProposer(keys) *sshkey.Key { return nil }

// TestFreezeOverrideAttacks: each way to get a promotion through a freeze
// without the approvers' signed, bound, unexpired overrides is refused by
// the PR gate, by rule: the freeze stands (frozen), the overrides fall
// short (override-count), and each bad override says why. Before
// overrides existed the gate refused every case by frozen alone; once
// overrides count, each case here is one an attacker tries first.
func TestFreezeOverrideAttacks(t *testing.T) {
	t.Parallel()
	record := errorLines(t, "testdata/freeze-override-attacks.golden", 22)
	now := time.Now()
	for _, tc := range []struct {
		name, min string
		proposer  func(k keys) *sshkey.Key
		attack    func(t *testing.T, f *fixture, k keys, p *Proposal)
		at        time.Duration // the gate runs at now + at
		rules     []string
	}{
		{"no override", "1", noProposer, func(t *testing.T, f *fixture, k keys, p *Proposal) {}, 0,
			[]string{window.RuleFrozen}},
		{"unsigned override", "1", noProposer, func(t *testing.T, f *fixture, k keys, p *Proposal) {
			f.handOverride(p.Branch, nil, "alice@example.com", now, nil)
		}, 0, []string{gate.RuleApprovalSignature, gate.RuleOverrideCount, window.RuleFrozen}},
		{"signed by a key in no allowed-signers file", "1", noProposer, func(t *testing.T, f *fixture, k keys, p *Proposal) {
			f.handOverride(p.Branch, &k.eve, "alice@example.com", now, nil)
		}, 0, []string{gate.RuleApprovalSignature, gate.RuleOverrideCount, window.RuleFrozen}},
		{"signed by a staging approver", "1", noProposer, func(t *testing.T, f *fixture, k keys, p *Proposal) {
			_, err := f.override(k.carol, now, 2*time.Hour)
			refusedBy(t, err, gate.RuleApprover)
			record("carol overrides production", err)
			f.handOverride(p.Branch, &k.carol, "carol@example.com", now, nil)
		}, 0, []string{gate.RuleApprover, gate.RuleOverrideCount, window.RuleFrozen}},
		{"signed by one approver, naming another", "1", noProposer, func(t *testing.T, f *fixture, k keys, p *Proposal) {
			f.handOverride(p.Branch, &k.bob, "alice@example.com", now, nil)
		}, 0, []string{gate.RuleApprovalSignature, gate.RuleOverrideCount, window.RuleFrozen}},
		{"fewer than minApprovals", "2", noProposer, func(t *testing.T, f *fixture, k keys, p *Proposal) {
			_, err := f.override(k.alice, now, 2*time.Hour)
			must(t, err)
		}, 0, []string{gate.RuleOverrideCount, window.RuleFrozen}},
		{"one approver twice for minApprovals 2", "2", noProposer, func(t *testing.T, f *fixture, k keys, p *Proposal) {
			_, err := f.override(k.alice, now, 2*time.Hour)
			must(t, err)
			_, err = f.override(k.alice, now.Add(time.Minute), 3*time.Hour)
			must(t, err)
		}, 0, []string{gate.RuleOverrideCount, window.RuleFrozen}},
		{"expired", "1", noProposer, func(t *testing.T, f *fixture, k keys, p *Proposal) {
			_, err := f.override(k.alice, now, time.Hour)
			must(t, err)
		}, 90 * time.Minute, []string{gate.RuleOverrideCount, gate.RuleOverrideExpired, window.RuleFrozen}},
		{"expires too far ahead", "1", noProposer, func(t *testing.T, f *fixture, k keys, p *Proposal) {
			_, err := f.override(k.alice, now, 25*time.Hour)
			if exitcode.Code(err) != exitcode.Usage {
				t.Fatalf("override for 25h: %v, want a usage error", err)
			}
			record("override for 25h", err)
			_, err = f.override(k.alice, now, -time.Hour)
			if exitcode.Code(err) != exitcode.Usage {
				t.Fatalf("override expiring an hour ago: %v, want a usage error", err)
			}
			record("override expiring an hour ago", err)
			// Signed by hand, by the approver, for a week.
			f.handOverride(p.Branch, &k.alice, "alice@example.com", now, func(r *promotion.Record, o *promotion.Override) {
				o.ExpiresAt = o.ApprovedAt.Add(7 * 24 * time.Hour)
				o.InputHash = r.OverrideInputFor(renderer, o.Reason, o.ExpiresAt).Hash()
			})
		}, 0, []string{gate.RuleOverrideCount, gate.RuleOverrideLifetime, window.RuleFrozen}},
		{"signed \"tomorrow\" to last two days from today", "1", noProposer, func(t *testing.T, f *fixture, k keys, p *Proposal) {
			f.handOverride(p.Branch, &k.alice, "alice@example.com", now, func(r *promotion.Record, o *promotion.Override) {
				o.ApprovedAt = o.ApprovedAt.Add(24 * time.Hour)
				o.ExpiresAt = o.ApprovedAt.Add(24 * time.Hour)
				o.InputHash = r.OverrideInputFor(renderer, o.Reason, o.ExpiresAt).Hash()
			})
		}, 0, []string{gate.RuleOverrideCount, gate.RuleOverrideLifetime, window.RuleFrozen}},
		{"bound to another attempt", "1", noProposer, func(t *testing.T, f *fixture, k keys, p *Proposal) {
			f.handOverride(p.Branch, &k.alice, "alice@example.com", now, func(r *promotion.Record, o *promotion.Override) {
				in := r.OverrideInputFor(renderer, o.Reason, o.ExpiresAt)
				in.PromotionID = strings.TrimSuffix(in.PromotionID, "1") + "2"
				o.InputHash = in.Hash()
			})
		}, 0, []string{gate.RuleOverrideBinding, gate.RuleOverrideCount, window.RuleFrozen}},
		{"bound to another render", "1", noProposer, func(t *testing.T, f *fixture, k keys, p *Proposal) {
			f.handOverride(p.Branch, &k.alice, "alice@example.com", now, func(r *promotion.Record, o *promotion.Override) {
				in := r.OverrideInputFor(renderer, o.Reason, o.ExpiresAt)
				in.Approval.RenderedHash = "sha256:" + strings.Repeat("0", 64)
				o.InputHash = in.Hash()
			})
		}, 0, []string{gate.RuleOverrideBinding, gate.RuleOverrideCount, window.RuleFrozen}},
		{"reason edited after signing", "1", noProposer, func(t *testing.T, f *fixture, k keys, p *Proposal) {
			_, err := f.override(k.alice, now, time.Hour)
			must(t, err)
			f.editOverride(p.Branch, nil, 0, func(o *promotion.Override) { o.Reason = "the board said so" })
		}, 0, []string{gate.RuleApprovalSignature, gate.RuleOverrideCount, window.RuleFrozen}},
		{"expiry edited after signing", "1", noProposer, func(t *testing.T, f *fixture, k keys, p *Proposal) {
			_, err := f.override(k.alice, now, time.Hour)
			must(t, err)
			f.editOverride(p.Branch, nil, 0, func(o *promotion.Override) { o.ExpiresAt = o.ExpiresAt.Add(20 * time.Hour) })
		}, 90 * time.Minute, []string{gate.RuleApprovalSignature, gate.RuleOverrideCount, window.RuleFrozen}},
		{"expiry edited in a commit the approver signs for another purpose", "1", noProposer, func(t *testing.T, f *fixture, k keys,
			p *Proposal) {
			_, err := f.override(k.alice, now, time.Hour)
			must(t, err)
			f.editOverride(p.Branch, &k.alice, 0, func(o *promotion.Override) { o.ExpiresAt = o.ExpiresAt.Add(20 * time.Hour) })
		}, 90 * time.Minute, []string{gate.RuleOverrideBinding, gate.RuleOverrideCount, window.RuleFrozen}},
		{"override by the proposer", "1", func(k keys) *sshkey.Key { return &k.alice }, func(t *testing.T, f *fixture, k keys, p *Proposal) {
			_, err := f.override(k.alice, now, time.Hour)
			refusedBy(t, err, gate.RuleFourEyes)
			record("the proposer overrides", err)
			f.handOverride(p.Branch, &k.alice, "alice@example.com", now, nil)
		}, 0, []string{gate.RuleFourEyes, gate.RuleOverrideCount, window.RuleFrozen}},
		{"forged into the verify commit", "1", noProposer, func(t *testing.T, f *fixture, k keys, p *Proposal) {
			file := promotion.RecordPath("checkout", "production")
			f.amend(p.Branch, func() {
				r := rec(t, f, p)
				o := promotion.Override{Approver: "alice@example.com", Reason: "forged", ExpiresAt: now.Add(time.Hour).UTC().Truncate(time.Second),
					ApprovedAt: now.UTC().Truncate(time.Second)}
				o.InputHash = r.OverrideInputFor(renderer, o.Reason, o.ExpiresAt).Hash()
				r.Overrides = append(r.Overrides, o)
				data, err := r.Marshal()
				must(t, err)
				f.write(map[string]string{file: string(data)})
			})
		}, 0, []string{gate.RuleApprovalSignature, gate.RuleOverrideCount, window.RuleFrozen}},
		{"a signed override commit that changes the overlay", "1", noProposer, func(t *testing.T, f *fixture, k keys, p *Proposal) {
			kfile := production + "/kustomization.yaml"
			f.handOverride(p.Branch, &k.alice, "alice@example.com", now, func(*promotion.Record, *promotion.Override) {
				f.write(map[string]string{kfile: f.read(kfile) + "# reviewed\n"})
			})
		}, 0, []string{gate.RuleApprovalCommit, gate.RuleOverrideCount, window.RuleFrozen}},
		{"two overrides in one signed commit", "2", noProposer, func(t *testing.T, f *fixture, k keys, p *Proposal) {
			f.handOverride(p.Branch, &k.alice, "alice@example.com", now, func(r *promotion.Record, o *promotion.Override) {
				b := promotion.Override{Approver: "bob@example.com", Reason: o.Reason, ExpiresAt: o.ExpiresAt, ApprovedAt: o.ApprovedAt}
				b.InputHash = r.OverrideInputFor(renderer, b.Reason, b.ExpiresAt).Hash()
				r.Overrides = append(r.Overrides, b)
			})
		}, 0, []string{gate.RuleApprovalCommit, gate.RuleOverrideCount, window.RuleFrozen}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, k, p := frozenApproved(t, tc.min, tc.proposer, now)
			tc.attack(t, f, k, p)
			rep := f.check(p.Branch, now.Add(tc.at))
			for _, r := range tc.rules {
				if !contains(rules(rep), r) {
					t.Errorf("rules %v, want %s:\n%s", rules(rep), r, strings.Join(rep.Refusals, "\n"))
				}
			}
			if rep.OK {
				t.Fatalf("the attack passed the gate")
			}
			var lines []string
			for _, fd := range rep.Findings {
				if strings.HasPrefix(fd.Rule, "override-") || fd.Field != "" && strings.HasPrefix(fd.Field, "overrides") {
					lines = append(lines, fd.Rule+": "+fd.Reason)
				}
			}
			if len(lines) > 0 {
				msg := overrideHash.ReplaceAllString(strings.Join(lines, "\n"), "sha256:<hash>")
				record(tc.name, errors.New(signedCommit.ReplaceAllString(msg, "signed <commit>")))
			}
		})
	}
}

// overrideHash and signedCommit are an input hash (it covers expiresAt)
// and a commit a key signed: both differ from run to run.
var (
	overrideHash = regexp.MustCompile(`sha256:[0-9a-f]{64}`)
	signedCommit = regexp.MustCompile(`signed [0-9a-f]{12}\b`)
)

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// rec is the production record at the tip of p's branch.
func rec(t *testing.T, f *fixture, p *Proposal) *promotion.Record {
	t.Helper()
	r, err := promotion.ReadRecord(context.Background(), f.repo, p.Branch, "checkout", "production")
	must(t, err)
	return r
}

// TestFreezeOverrideLifts: bob's signed override (alice proposed nothing,
// bob approved) lets the approved attempt through the freeze and outside
// the window: the gate passes with the closure as a warning naming who
// overrode, why and until when; the merge reconciled while the override
// holds is RECONCILING, its record keeps the override.
func TestFreezeOverrideLifts(t *testing.T) {
	t.Parallel()
	now := time.Now()
	later, _ := windowLater(now)
	for _, tc := range []struct {
		name   string
		fields map[string]any
		rule   string
	}{
		{"freeze", longFreeze(now), window.RuleFrozen},
		{"outside the window", later, window.RuleOutsideWindow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, k := signedFixture(t, "1")
			p := f.verified(nil)
			_, err := f.approve(k.bob)
			must(t, err)
			f.closeProduction(tc.fields)
			f.commit("production closed")
			if rep := f.check(p.Branch, now); rep.OK || !contains(rules(rep), tc.rule) {
				t.Fatalf("premise: closed without an override: %v", rules(rep))
			}
			tr, err := f.override(k.alice, now, 2*time.Hour)
			must(t, err)
			o := tr.Record.Overrides[0]
			if tr.Record.State != promotion.Approved || o.Approver != "alice@example.com" || o.Reason != "hotfix for the checkout outage" ||
				!o.ExpiresAt.Equal(now.Add(2*time.Hour).UTC().Truncate(time.Second)) {
				t.Fatalf("record after the override: %s %+v", tr.Record.State, tr.Record.Overrides)
			}
			rep := f.check(p.Branch, now)
			if !rep.OK || len(rep.Warnings) != 1 || rep.Warnings[0].Rule != tc.rule ||
				!strings.Contains(rep.Warnings[0].Reason, "overridden by alice@example.com until "+o.ExpiresAt.Format(time.RFC3339)+
					" (alice@example.com: hotfix for the checkout outage)") {
				t.Fatalf("check with the override: %v %q %+v", rules(rep), rep.Refusals, rep.Warnings)
			}
			f.git("merge", "-q", "--no-ff", "-m", "merge "+p.Branch, p.Branch)
			tr, _, err = Reconcile(context.Background(), f.repo, ReconcileRequest{App: "checkout", To: "production", By: "ci", Now: now.Add(time.Hour),
				Renderer: renderer})
			must(t, err)
			if tr.Record.State != promotion.Reconciling || len(tr.Record.Overrides) != 1 {
				t.Fatalf("reconciled with the override: %s %+v", tr.Record.State, tr.Record.Overrides)
			}
			if msg := f.git("log", "-1", "--format=%B", "main"); !strings.Contains(msg, "is closed ("+tc.rule+"): overridden by alice@example.com") {
				t.Fatalf("the reconcile commit does not name the override: %q", msg)
			}
		})
	}
}

// TestFreezeOverrideExpiredAtReconcile: an override valid when the PR
// gate ran but expired before the merge is reconciled does not lift the
// freeze: the record is HALTED with a reason naming the expiry.
func TestFreezeOverrideExpiredAtReconcile(t *testing.T) {
	t.Parallel()
	now := time.Now()
	f, k, p := frozenApproved(t, "1", noProposer, now)
	_, err := f.override(k.alice, now, time.Hour)
	must(t, err)
	if rep := f.check(p.Branch, now); !rep.OK {
		t.Fatalf("premise: the override lifts the freeze at the gate: %q", rep.Refusals)
	}
	f.git("merge", "-q", "--no-ff", "-m", "merge "+p.Branch, p.Branch)
	_, _, err = Reconcile(context.Background(), f.repo, ReconcileRequest{App: "checkout", To: "production", By: "ci", Now: now.Add(90 * time.Minute),
		Renderer: renderer})
	re := refusedBy(t, err, window.RuleFrozen)
	errorLines(t, "testdata/freeze-override-reconcile.golden", 1)("expired before reconcile", err)
	until := now.Add(time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	if !strings.Contains(re.Reason, "expired at "+until) {
		t.Fatalf("refusal %q does not name the expiry %s", re.Reason, until)
	}
	r, err := promotion.ReadRecord(context.Background(), f.repo, "main", "checkout", "production")
	must(t, err)
	if r.State != promotion.Halted || !strings.Contains(r.Reason, "freeze override overrides[0] by alice@example.com: expired at "+until) {
		t.Fatalf("record %s %q, want HALTED naming the override's expiry", r.State, r.Reason)
	}
}

// TestFreezeOverrideForgedWhileOpen: an override written into the record
// without its approver's signed commit is refused even while the
// environment is open: the record is the audit trail, and it must not say
// that someone overrode a freeze who did not.
func TestFreezeOverrideForgedWhileOpen(t *testing.T) {
	t.Parallel()
	now := time.Now()
	f, k := signedFixture(t, "1")
	p := f.verified(nil)
	_, err := f.approve(k.bob)
	must(t, err)
	f.handOverride(p.Branch, nil, "alice@example.com", now, nil)
	rep := f.check(p.Branch, now)
	if rep.OK || strings.Join(rules(rep), " ") != gate.RuleApprovalSignature {
		t.Fatalf("forged override while open: %v %q", rules(rep), rep.Refusals)
	}
}

// TestFreezeOverrideNeedsApprovers: where the environment lists no
// approvers nobody can sign an override: promote approve --override-freeze
// is refused, and an override written by hand does not lift the freeze.
func TestFreezeOverrideNeedsApprovers(t *testing.T) {
	t.Parallel()
	now := time.Now()
	f := newFixture(t)
	f.unsignedApprovals()
	p := f.approved(now)
	f.closeProduction(longFreeze(now))
	f.commit("production frozen")
	_, err := Override(context.Background(), f.repo, OverrideRequest{App: "checkout", To: "production", Reason: "hotfix", Expires: now.Add(time.Hour),
		Now: now, Renderer: renderer})
	refusedBy(t, err, gate.RuleOverrideApprovers)
	f.handOverride(p.Branch, nil, "alice", now, nil)
	rep := f.check(p.Branch, now)
	for _, r := range []string{gate.RuleOverrideApprovers, gate.RuleOverrideCount, window.RuleFrozen} {
		if !contains(rules(rep), r) {
			t.Errorf("rules %v, want %s", rules(rep), r)
		}
	}
}

// TestProposeForOverride: a closed production takes a new attempt only
// when asked for an override; the attempt then goes in with bob's signed
// override and not before.
func TestProposeForOverride(t *testing.T) {
	t.Parallel()
	now := time.Now()
	f, k := signedFixture(t, "1")
	f.closeProduction(longFreeze(now))
	f.commit("production frozen")
	req := ProposeRequest{App: "checkout", From: "staging", To: "production", Path: production, Renderer: renderer, Now: now}
	_, err := Propose(context.Background(), f.repo, req)
	refusedBy(t, err, window.RuleFrozen)
	req.ForOverride = true
	p, err := Propose(context.Background(), f.repo, req)
	must(t, err)
	if !strings.HasPrefix(p.Closed, window.RuleFrozen+" (environments.production.freezes[0]): ") {
		t.Fatalf("proposal for an override: closed %q", p.Closed)
	}
	_, err = Verify(context.Background(), f.repo, VerifyRequest{App: "checkout", To: "production", Now: now})
	must(t, err)
	_, err = f.approve(k.alice)
	must(t, err)
	if rep := f.check(p.Branch, now); rep.OK || strings.Join(rules(rep), " ") != window.RuleFrozen {
		t.Fatalf("approved without an override: %v %q", rules(rep), rep.Refusals)
	}
	_, err = f.override(k.bob, now, time.Hour)
	must(t, err)
	if rep := f.check(p.Branch, now); !rep.OK {
		t.Fatalf("with bob's override: %q", rep.Refusals)
	}
}

// TestRollbackForOverride: a freeze holds a rollback (rollbackInFreeze
// hold); opened for an override it goes in with an approver's signed
// override.
func TestRollbackForOverride(t *testing.T) {
	t.Parallel()
	now := time.Now()
	f, _ := newRollbackFixture(t)
	alice, bob := sshkey.New(t, "alice@example.com"), sshkey.New(t, "bob@example.com")
	fields := longFreeze(now)
	fields["approvers"] = []any{"alice@example.com", "bob@example.com"}
	f.closeProduction(fields)
	var pol map[string]any
	must(t, sigyaml.Unmarshal([]byte(f.read(promotion.PolicyFile)), &pol))
	pol["allowedSigners"] = "allowed-signers"
	data, err := sigyaml.Marshal(pol)
	must(t, err)
	f.write(map[string]string{promotion.PolicyFile: string(data), "allowed-signers": sshkey.Signers(alice, bob)})
	f.commit("production frozen, approvers")
	req := RollbackRequest{App: "web", Env: "production", To: ledger.Previous, Path: webOverlay, Renderer: renderer, Now: now,
		Exists: func(context.Context, string) (bool, error) { return true, nil }}
	_, err = Rollback(context.Background(), f.repo, req)
	refusedBy(t, err, window.RuleFrozen)
	req.ForOverride = true
	res, err := Rollback(context.Background(), f.repo, req)
	must(t, err)
	branch := res.Proposal.Branch
	_, err = Approve(context.Background(), f.as(alice), ApproveRequest{App: "web", To: "production", Expires: now.Add(2 * time.Hour), Now: now,
		Renderer: renderer})
	must(t, err)
	if rep := f.check(branch, now); rep.OK || strings.Join(rules(rep), " ") != window.RuleFrozen {
		t.Fatalf("rollback approved without an override: %v %q", rules(rep), rep.Refusals)
	}
	_, err = Override(context.Background(), f.as(bob), OverrideRequest{App: "web", To: "production", Reason: "roll back the broken 1.1.0",
		Expires: now.Add(time.Hour), Now: now, Renderer: renderer})
	must(t, err)
	if rep := f.check(branch, now); !rep.OK {
		t.Fatalf("rollback with bob's override: %q", rep.Refusals)
	}
}

// TestReconcileJudgesOverrides: reconcile cannot verify signatures after a
// (squash) merge, so what it can check it checks again: an override that
// names no approver of the base's registry, binds another render or lasts
// too long does not lift the freeze at reconcile either, whatever reached
// the base branch; the record is HALTED naming why.
func TestReconcileJudgesOverrides(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, tc := range []struct {
		name, approver, want string
		edit                 func(r *promotion.Record, o *promotion.Override)
	}{
		{"not an approver", "carol@example.com", "carol@example.com is not an approver of production", nil},
		{"another render", "alice@example.com", "is not this attempt's", func(r *promotion.Record, o *promotion.Override) {
			in := r.OverrideInputFor(renderer, o.Reason, o.ExpiresAt)
			in.Approval.RenderedHash = "sha256:" + strings.Repeat("0", 64)
			o.InputHash = in.Hash()
		}},
		{"a week long", "alice@example.com", "an override lasts at most 24h0m0s", func(r *promotion.Record, o *promotion.Override) {
			o.ExpiresAt = o.ApprovedAt.Add(7 * 24 * time.Hour)
			o.InputHash = r.OverrideInputFor(renderer, o.Reason, o.ExpiresAt).Hash()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, k, p := frozenApproved(t, "1", noProposer, now)
			f.handOverride(p.Branch, &k.alice, tc.approver, now, tc.edit)
			f.git("merge", "-q", "--no-ff", "-m", "merge "+p.Branch, p.Branch)
			_, _, err := Reconcile(context.Background(), f.repo, ReconcileRequest{App: "checkout", To: "production", By: "ci", Now: now, Renderer: renderer})
			re := refusedBy(t, err, window.RuleFrozen)
			r, err := promotion.ReadRecord(context.Background(), f.repo, "main", "checkout", "production")
			must(t, err)
			if r.State != promotion.Halted || !strings.Contains(r.Reason, tc.want) || !strings.Contains(re.Reason, tc.want) {
				t.Fatalf("record %s %q (refusal %q), want HALTED saying %q", r.State, r.Reason, re.Reason, tc.want)
			}
		})
	}
}
