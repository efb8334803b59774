package gate

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/tracing"
)

// Rules of the repository check's findings (Finding.Rule).
const (
	// RuleRepositoryCheck is the rule of the refusal a failed Check makes (exit 3).
	RuleRepositoryCheck = "repository-check"
	// RuleProtected: a protected environment's render changes outside a
	// promotion record.
	RuleProtected = "protected-change"
	// RuleDuplicate: one object is rendered on one cluster by two apps or
	// two paths.
	RuleDuplicate = "duplicate-object"
	// RuleController: a controller object is not bound to an overlay path
	// and destination of the one environment that owns its file.
	RuleController = "controller-binding"
	// RuleMultiSource: two sources of a multi-source Application render
	// the same object.
	RuleMultiSource = "multi-source-overlap"
)

// PromotionRecord is the one promotion record a change carries: the change is a
// promotion of App to Environment, whose target the promotion gate
// (CheckPromotion) judges.
type PromotionRecord struct {
	App         string `json:"app"`
	Environment string `json:"environment"`
	Record      string `json:"record"`
}

// OverlayDiff is one app's overlay in one environment, rendered at both
// revisions.
type OverlayDiff struct {
	App  string `json:"app"`
	Path string `json:"path"`
	// BaseHash and HeadHash are the rendered hashes ("" where the overlay
	// does not exist).
	BaseHash string `json:"baseHash,omitempty"`
	HeadHash string `json:"headHash,omitempty"`
	// Promotion: the target of the change's promotion record, judged by
	// the promotion gate.
	Promotion bool               `json:"promotion,omitempty"`
	Changes   []promotion.Change `json:"changes"`
	// Checks says how the overlay's runtime checks file changed: changed,
	// added or removed ("" when it did not).
	Checks  string         `json:"checks,omitempty"`
	Classes map[string]int `json:"classes"`
}

// EnvironmentDiff is the differences of one registered environment.
type EnvironmentDiff struct {
	Name      string        `json:"name"`
	Cluster   string        `json:"cluster"`
	Protected bool          `json:"protected"`
	Overlays  []OverlayDiff `json:"overlays"`
}

// RepositoryReport is the verdict on a change.
type RepositoryReport struct {
	Base string `json:"base"`
	// MergeBase is the commit head was cut from (its merge base with
	// base): the change is the difference from it to head (three-dot
	// semantics), so what base gained since is not part of it.
	MergeBase string   `json:"mergeBase"`
	Head      string   `json:"head"`
	Files     []string `json:"files"`
	// Registry is the policy file the environments were read from (at
	// base); "" when it registers none (nothing is then checked).
	Registry     string            `json:"registry,omitempty"`
	Promotion    *PromotionRecord  `json:"promotion,omitempty"`
	Environments []EnvironmentDiff `json:"environments"`
	Refusals     []string          `json:"refusals"`
	Findings     []Finding         `json:"findings"`
	// Judges are the environments whose judges the change moves (their
	// registry entry, the files it names, the allowed signers, the
	// allow-list entries in their scope, the checks of the environments
	// they promote from): listed for every environment, refused for a
	// protected one without its approvers' signed approvals.
	Judges []JudgesDiff `json:"judges"`
	// Preexisting are findings already true at base: listed, not refused.
	Preexisting []Finding `json:"preexisting"`
	OK          bool      `json:"ok"`
	// TraceID is the trace of the gate's span ("" when tracing is off),
	// for the caller's log line.
	TraceID string `json:"-"`
}

// Changes counts the report's differences.
func (rep *RepositoryReport) Changes() int {
	n := 0
	for _, e := range rep.Environments {
		for _, o := range e.Overlays {
			n += len(o.Changes)
			if o.Checks != "" {
				n++ // the runtime checks file
			}
		}
	}
	return n
}

func (rep *RepositoryReport) refuse(f Finding) {
	rep.Refusals = append(rep.Refusals, f.Reason)
	rep.Findings = append(rep.Findings, f)
}

// repoCheck is one run of Check: the registry, both trees and their renders.
type repoCheck struct {
	r      *gitops.Repo
	req    Request
	reg    *environment.Registry
	rep    *RepositoryReport
	bt, ht *gitops.Tree
	base   *revision
	head   *revision
	// blobs are the claimed controller files read from Git, by revision
	// and file: the controllers step reads them, the judges step hashes
	// the same bytes.
	blobs map[string]map[string][]byte
}

// CheckRepository is the repository check of the change from req.Base to req.Head
// (from their merge base: what req.Base gained since is not part of it):
// every overlay of every environment the registry (read at base) lists is
// rendered at both revisions and its differences listed and classified;
// the refusals (RuleProtected, RuleDuplicate, RuleController,
// RuleMultiSource) are listed in the report (OK false). An error is a
// failure to decide: exit 2 for a revision that does not resolve, exit 4
// for an invalid policy, manifest or controller file.
func CheckRepository(ctx context.Context, r *gitops.Repo, req Request) (rep *RepositoryReport, err error) {
	ctx, span := tracing.Start(ctx, "gate.repository", attribute.String("throughline.base", req.Base), attribute.String("throughline.head", req.Head))
	defer func() {
		var found []Finding
		if rep != nil {
			found = rep.Findings
		}
		endCheck(span, rep != nil && rep.OK, found, err)
	}()
	c := &repoCheck{r: r, req: req, blobs: map[string]map[string][]byte{}}
	if err := c.start(ctx, req); err != nil {
		return nil, err
	}
	c.rep.TraceID = tracing.TraceID(ctx)
	if !c.reg.Configured() {
		return c.finish(), nil
	}
	if c.bt, err = r.Tree(ctx, c.rep.MergeBase); err != nil {
		return nil, err
	}
	defer func() { _ = c.bt.Close() }() // temporary exports; the report does not depend on their removal
	if c.ht, err = r.Tree(ctx, c.rep.Head); err != nil {
		return nil, err
	}
	defer func() { _ = c.ht.Close() }()
	for _, st := range []struct {
		name string
		run  func(context.Context) error
	}{{"render-base", func(ctx context.Context) (err error) { c.base, err = c.load(ctx, c.bt); return err }},
		{"render-head", func(ctx context.Context) (err error) { c.head, err = c.load(ctx, c.ht); return err }},
		{"differences", func(context.Context) error { c.differences(); return nil }},
		{"trusted", c.trusted}, {"structure", c.structure}, {"judges", c.judges}} {
		if err := step(ctx, st.name, &c.rep.Findings, st.run); err != nil {
			return nil, err
		}
	}
	return c.finish(), nil
}

// start resolves the revisions, lists the changed files, finds the
// change's promotion record and reads the registry at base.
func (c *repoCheck) start(ctx context.Context, req Request) error {
	base, err := c.r.Resolve(ctx, req.Base)
	if err != nil {
		return exitcode.Usagef("--base %s: %v", req.Base, err)
	}
	head, err := c.r.Resolve(ctx, req.Head)
	if err != nil {
		return exitcode.Usagef("--head %s: %v", req.Head, err)
	}
	mb, err := c.r.MergeBase(ctx, base, head)
	if err != nil {
		return exitcode.Usagef("--base %s and --head %s have no common history: %v", req.Base, req.Head, err)
	}
	c.rep = &RepositoryReport{Base: base, MergeBase: mb, Head: head, Environments: []EnvironmentDiff{}, Refusals: []string{}, Findings: []Finding{},
		Judges: []JudgesDiff{}, Preexisting: []Finding{}}
	if c.rep.Files, err = c.r.Changed(ctx, mb, head); err != nil {
		return err
	}
	var records []string
	for _, f := range c.rep.Files {
		if rel, ok := c.r.Rel(f); ok && isRecord(rel) {
			records = append(records, rel)
		}
	}
	if len(records) == 1 {
		parts := strings.Split(records[0], "/")
		c.rep.Promotion = &PromotionRecord{App: parts[1], Environment: strings.TrimSuffix(parts[2], ".yaml"), Record: records[0]}
	}
	if c.reg, err = promotion.ReadRegistry(ctx, c.r, base); err != nil {
		return err
	}
	if c.reg.Configured() {
		c.rep.Registry = c.reg.File()
	}
	return nil
}

// isRecord reports whether the GitOps-root-relative file is a promotion
// record's path (promotion/<app>/<env>.yaml).
func isRecord(rel string) bool {
	return strings.HasPrefix(rel, promotion.Dir+"/") && strings.Count(rel, "/") == 2 && strings.HasSuffix(rel, ".yaml")
}

// promotes reports whether the overlay k is the target of the change's
// promotion record (the promotion gate judges it).
func (c *repoCheck) promotes(k overlayKey) bool {
	p := c.rep.Promotion
	return p != nil && p.App == k.app && p.Environment == k.env
}

func (c *repoCheck) finish() *RepositoryReport {
	c.rep.OK = len(c.rep.Refusals) == 0
	return c.rep
}

// differences classifies every overlay's differences and refuses those of
// a protected environment outside the change's promotion.
func (c *repoCheck) differences() {
	for _, name := range c.reg.Names() {
		env, _ := c.reg.Get(name)
		e := EnvironmentDiff{Name: name, Cluster: env.ClusterName(), Protected: env.Protected, Overlays: []OverlayDiff{}}
		closed := closedAt(name, env.EnvironmentPolicy, c.req.Now)
		for _, k := range overlayKeys(c.base, c.head, name) {
			b, h := c.base.overlays[k], c.head.overlays[k]
			o := OverlayDiff{App: k.app, Path: k.path, Classes: map[string]int{}}
			o.Promotion = c.promotes(k)
			if b != nil {
				o.BaseHash = b.hash
			}
			if h != nil {
				o.HeadHash = h.hash
			}
			o.Changes = promotion.Classify(b.objects(), h.objects())
			if o.Changes == nil {
				o.Changes = []promotion.Change{}
			}
			for cl, n := range promotion.Classes(o.Changes) {
				o.Classes[string(cl)] = n
			}
			o.Checks = checksChange(b, h)
			if env.Protected && !o.Promotion && (len(o.Changes) > 0 || o.Checks != "") {
				c.protected(name, o)
			}
			// A promotion is judged by CheckPromotion (its window step).
			if closed != nil && !o.Promotion && (len(o.Changes) > 0 || o.Checks != "") {
				c.rep.refuse(Finding{Rule: closed.Rule, Environment: name, File: promotion.PolicyFile, Field: closed.Field,
					Reason: fmt.Sprintf("%s changes while it is closed: %s", o.Path, closed.Reason)})
			}
			e.Overlays = append(e.Overlays, o)
		}
		c.rep.Environments = append(c.rep.Environments, e)
	}
}

// protected refuses every difference of o, an overlay of the protected
// environment env that the change does not promote.
func (c *repoCheck) protected(env string, o OverlayDiff) {
	if o.Checks != "" {
		file := path.Join(o.Path, render.ChecksFile)
		c.rep.refuse(Finding{Rule: RuleProtected, Environment: env, File: file,
			Reason: fmt.Sprintf("%s: runtime checks %s (%s is protected: the checks that judge its releases change only by a promotion, %s)",
				file, o.Checks, env, promotion.RecordPath(o.App, env))})
	}
	for _, ch := range o.Changes {
		c.rep.refuse(Finding{Rule: RuleProtected, Class: ch.Class, Environment: env, File: o.Path, Object: ch.Object.String(), Field: ch.Field,
			Old: ch.Before, New: ch.After, Reason: fmt.Sprintf("%s: %s (%s is protected: changed only by a promotion, %s)", o.Path, ch.String(), env,
				promotion.RecordPath(o.App, env))})
	}
}

// structure refuses the duplicate objects and the unbound controllers the
// head has and the base had not; those the base had are Preexisting.
func (c *repoCheck) structure(ctx context.Context) error {
	before, err := c.findings(ctx, c.bt, c.base)
	if err != nil {
		return err
	}
	after, err := c.findings(ctx, c.ht, c.head)
	if err != nil {
		return err
	}
	was := map[Finding]bool{}
	for _, f := range before {
		was[f] = true
	}
	for _, f := range after {
		if was[f] {
			c.rep.Preexisting = append(c.rep.Preexisting, f)
		} else {
			c.rep.refuse(f)
		}
	}
	return nil
}

// findings are the duplicate objects and controller findings of one
// revision, sorted.
func (c *repoCheck) findings(ctx context.Context, t *gitops.Tree, rv *revision) ([]Finding, error) {
	out := duplicates(c.reg, rv)
	cs, err := c.controllers(ctx, t, rv)
	if err != nil {
		return nil, err
	}
	out = append(out, cs...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Reason < b.Reason
	})
	return out, nil
}
