package chainview

import (
	"errors"
	"strings"
	"time"

	"github.com/throughline-dev/throughline/breakglass"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
)

// Options say what Load reads and how it judges time.
type Options struct {
	// Rev is the revision read (default: the repository's base branch).
	Rev string
	// Now is the time ages and expiries are judged at (default time.Now).
	Now time.Time
	// Live is what runs, by Key(app, env), when the caller has it (the
	// Acceptances of a cluster): the grid then shows drift.
	Live map[string]Live
	// CommitURL, when set, makes every commit a link: a format with one %s
	// for the full commit id (https://forge.example/org/gitops/commit/%s).
	CommitURL string
}

// CheckCommitURL refuses a CommitURL that does not take exactly one %s
// (and no other verb); the empty one (no links) is fine.
func CheckCommitURL(u string) error {
	plain := strings.ReplaceAll(u, "%%", "")
	if u != "" && (strings.Count(plain, "%") != 1 || strings.Count(plain, "%s") != 1) {
		return errors.New("want exactly one %s for the commit id")
	}
	return nil
}

// Live is what one app runs in one environment.
type Live struct {
	// Digests are the image digests the running Pods report.
	Digests []string
	// Source names where they were read (an Acceptance namespace/name).
	Source string
}

// Key is the map key of an app in an environment.
func Key(app, env string) string { return app + "/" + env }

// Model is everything the pages show, read at one revision.
type Model struct {
	// Base is the branch read, Rev the commit.
	Base, Rev string
	// Now is when it was read.
	Now time.Time
	// Environments are the columns: the registry's, then any other one a
	// record names.
	Environments []string
	// Apps are the rows, sorted.
	Apps []*App
	// Promotions are the chains of the records at Rev, by promotionId.
	Promotions map[string]*Chain
	// Problems are the files that could not be read (invalid input): the
	// view shows them instead of failing.
	Problems []string
	// Closed are the environments the policy at Rev closes at Now (its
	// windows, a freeze), by name: what promote status lists below its
	// table, read by the same function (gate.Closed).
	Closed []gate.ClosedEnvironment
	// Pulls are the forge's open requests (nil: no forge configured;
	// WithPulls sets it).
	Pulls *Pulls
	// OtherPulls are the forge's open requests that belong to no attempt
	// in flight (WithPulls), each with why.
	OtherPulls []OtherPull
	commitURL  string
}

// App is one app: its cells by environment and its history.
type App struct {
	Name  string
	Cells []*Cell
	// History is, per environment with a record, what the environment
	// accepted and what a rollback would pick (filled by Load, not by
	// LoadGrid).
	History []*EnvHistory
	// Attempts are the records of the app on the base branch and its
	// attempt branches (promote status --all).
	Attempts []ledger.StatusRow
}

// Cell is an app in an environment.
type Cell struct {
	App, Environment string
	// Record is the promotion record at Rev (nil: none).
	Record *promotion.Record
	// Pause is the break-glass pause record (nil: none).
	Pause *breakglass.Record
	// Age is how long the record is in its state.
	Age time.Duration
	// Live is what runs (nil: not known), Drift why it is not what Git
	// declares ("" when it is, or when Live is nil).
	Live  *Live
	Drift string
	// Chain is the record's chain (Load only).
	Chain *Chain
	// Waits says, without a click, what the record waits on or why it
	// stopped: approvals 1 of 2, the merge, the controller, a HALTED
	// record's reason, a chain that does not prove an ACCEPTED record
	// ("" for an ACCEPTED record whose chain is proven, or not judged).
	Waits string
	// Deadline is when the notifier halts the RECONCILING record (the
	// environment's reconcileDeadline after it became RECONCILING; zero:
	// none).
	Deadline time.Time
	// InFlight are the attempts open on attempt branches for this app and
	// environment (promote status: not merged, not closed), each with what
	// it waits on (Load only).
	InFlight []Flight
	// PullsUnavailable says, on a cell with attempts in flight, that the
	// forge's list of requests could not be read (WithPulls).
	PullsUnavailable string
}

// Flight is an attempt open on its attempt branch.
type Flight struct {
	ledger.StatusRow
	// Tag is the informative tag of its image.
	Tag string
	// Waits says what it waits on (approvals 1 of 2, the merge).
	Waits string
	// Pull is its open pull/merge request on the forge (nil: none, or no
	// forge configured; WithPulls sets it).
	Pull *PullRequest
}

// Tag is the informative tag of the record's image ("" without one).
func (c *Cell) Tag() string {
	if c.Record == nil {
		return ""
	}
	return imageTag(c.Record.Artifact.Image)
}

// Paused reports whether an active pause holds reconciliation.
func (c *Cell) Paused() bool { return c.Pause.Active() }

// imageTag is the tag of name[:tag]@digest.
func imageTag(image string) string {
	ref, _, _ := strings.Cut(image, "@")
	slash := strings.LastIndex(ref, "/")
	if i := strings.LastIndex(ref, ":"); i > slash {
		return ref[i+1:]
	}
	return ""
}

// Status is an arrow's verdict.
type Status string

// The verdicts.
const (
	Proven  Status = "proven"
	Pending Status = "pending"
	Broken  Status = "broken"
)

// Arrow is one link of the chain.
type Arrow struct {
	// Name is the arrow ("source commit", ..., "production runtime evidence").
	Name   string
	Status Status
	// Summary says in one line what the arrow rests on, or why it is
	// pending or broken.
	Summary string
	// Facts are the evidence it rests on, in order.
	Facts []Fact
	// Pods are the observed imageIDs (runtime evidence arrows).
	Pods []evidence.Pod
}

// Fact is one piece of evidence: a label and a value; Commit marks a
// commit id (a link when Options.CommitURL is set).
type Fact struct {
	Label, Value string
	Commit       bool
}

// Chain is a promotion record's nine arrows.
type Chain struct {
	Record *promotion.Record
	// Source is the environment whose acceptance verified the artifact
	// (the target itself for a rollback).
	Source string
	// Rollback is set for a record verified by a prior acceptance.
	Rollback bool
	Arrows   []Arrow
	// Approvals are the approvals with their expiry judged at Now.
	Approvals []ApprovalView
	// Required is how many distinct approvers the environment requires.
	Required int
	// Attempts are the record's rows in promote status (base and attempt
	// branches).
	Attempts []ledger.StatusRow
	// Bundles are the supply-chain evidence bundles the record carries.
	Bundles []Bundle
	// CheckSets are the runtime checks of the source acceptance's evidence
	// and of the target's own, each with the gate's verdict.
	CheckSets []CheckSet
}

// ApprovalView is one approval; Expired says it had expired when it was
// used (at the merge), or by now when not merged yet.
type ApprovalView struct {
	promotion.Approval
	Expired bool
}

// Verdict is the chain in one word: broken when an arrow is, pending when
// one is, else proven.
func (c *Chain) Verdict() Status {
	v := Proven
	for _, a := range c.Arrows {
		switch a.Status {
		case Broken:
			return Broken
		case Pending:
			v = Pending
		}
	}
	return v
}

// FirstBroken is the first broken arrow (nil: none).
func (c *Chain) FirstBroken() *Arrow {
	for i := range c.Arrows {
		if c.Arrows[i].Status == Broken {
			return &c.Arrows[i]
		}
	}
	return nil
}

// Proven counts the proven arrows.
func (c *Chain) Proven() int {
	n := 0
	for _, a := range c.Arrows {
		if a.Status == Proven {
			n++
		}
	}
	return n
}

// EnvHistory is what one environment accepted for an app.
type EnvHistory struct {
	Environment string
	// Current is the digest desired now.
	Current string
	// Accepted are the proven acceptances, newest first, each with what
	// rollback --to <digest> says.
	Accepted []Candidate
	// Unproven are the acceptances claimed without proof.
	Unproven []Candidate
	// Previous is what rollback --to previous picks ("" when it refuses:
	// PreviousRefused says why).
	Previous, PreviousRefused string
}

// Candidate is one rollback target and the verdict of rollback on it.
type Candidate struct {
	Digest, Tag, PromotionID, Commit, Evidence string
	// Refused says why rollback refuses it ("" when it may be picked).
	Refused string
}
