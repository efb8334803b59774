package chainview

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/throughline-dev/throughline/breakglass"
	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
)

// LoadGrid reads the grid at opts.Rev: every promotion record and pause
// record, by app and environment, without judging the chains (the index
// page needs no more). A record or pause record that cannot be used is
// listed in Problems, not fatal; a failing git is an error.
func LoadGrid(ctx context.Context, repo *gitops.Repo, opts Options) (*Model, error) {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	rev, commit, err := opts.Rev, "", error(nil)
	if rev == "" {
		// The base branch as the remote has it when there is one (a
		// clone's local branch may be behind).
		rev = repo.Base
		commit, err = repo.BaseRev(ctx)
	} else {
		commit, err = repo.Resolve(ctx, rev)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the chain view at %s: %w", rev, err)
	}
	m := &Model{Base: rev, Rev: commit, Now: opts.Now, Promotions: map[string]*Chain{}, commitURL: opts.CommitURL}
	reg, err := promotion.ReadRegistry(ctx, repo, commit)
	if err != nil {
		if exitcode.Code(err) != exitcode.Invalid {
			return nil, err
		}
		m.Problems = append(m.Problems, err.Error())
		reg, _ = promotion.Registry(nil)
	}
	cells := map[string]*Cell{}
	if err := m.readRecords(ctx, repo, cells); err != nil {
		return nil, err
	}
	if err := m.readPauses(ctx, repo, cells); err != nil {
		return nil, err
	}
	m.arrange(reg, cells, opts.Live)
	// An unusable policy is listed in Problems already: then no
	// environment is said to be closed.
	if m.Closed, err = gate.Closed(ctx, repo, commit, opts.Now); err != nil && exitcode.Code(err) != exitcode.Invalid {
		return nil, fmt.Errorf("reading the chain view's windows at %s: %w", rev, err)
	}
	m.describe(reg)
	return m, nil
}

// Load is LoadGrid plus every record's chain, every app's accepted
// history with what rollback would pick and refuse, and the attempts of
// promote status --all (read at the branches' tips). The records are
// judged concurrently (each judgement is mostly waiting for git).
func Load(ctx context.Context, repo *gitops.Repo, opts Options) (*Model, error) {
	m, err := LoadGrid(ctx, repo, opts)
	if err != nil {
		return nil, err
	}
	reg, err := promotion.ReadRegistry(ctx, repo, m.Rev)
	if err != nil {
		reg, _ = promotion.Registry(nil) // listed in Problems by LoadGrid
	}
	// promote status stops at a record it cannot use (listed in Problems
	// already): the view then shows no attempts rather than nothing.
	rows, err := ledger.StatusAll(ctx, repo, "")
	if err != nil && exitcode.Code(err) != exitcode.Invalid {
		return nil, err
	}
	keys, err := ledger.EvidenceKeysAt(ctx, repo, m.Rev)
	if exitcode.Code(err) == exitcode.Invalid {
		// An unusable evidenceSigners file proves no evidence (the
		// gates refuse it too).
		keys, err = &evidence.Keys{File: "evidenceSigners (unusable: " + err.Error() + ")"}, nil
	}
	if err != nil {
		return nil, err
	}
	c := &chainer{repo: repo, rev: m.Rev, now: m.Now, reg: reg, keys: keys}
	if err := m.inFlight(ctx, repo, reg, rows); err != nil {
		return nil, err
	}
	var cells []*Cell
	for _, app := range m.Apps {
		for _, row := range rows {
			if row.App == app.Name {
				app.Attempts = append(app.Attempts, row)
			}
		}
		for _, cell := range app.Cells {
			if cell.Record != nil {
				cells = append(cells, cell)
			}
		}
	}
	hist := make([]*EnvHistory, len(cells))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(judgeWorkers)
	for i, cell := range cells {
		g.Go(func() error {
			var err error
			hist[i], err = judge(gctx, c, reg, cell, rows)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for i, cell := range cells {
		m.Promotions[cell.Record.PromotionID] = cell.Chain
		for _, app := range m.Apps {
			if app.Name == cell.App {
				app.History = append(app.History, hist[i])
			}
		}
	}
	return m, nil
}

// judgeWorkers bounds the records judged at once (git processes).
const judgeWorkers = 8

// judge fills the chain of cell's record and returns the environment's
// history.
func judge(ctx context.Context, c *chainer, reg *environment.Registry, cell *Cell, rows []ledger.StatusRow) (*EnvHistory, error) {
	rec := cell.Record
	required := 1
	if e, ok := reg.Get(rec.Target.Environment); ok {
		required = e.RequiredApprovals()
	}
	ch, err := c.chain(ctx, rec, required)
	if err != nil {
		return nil, fmt.Errorf("judging the chain of %s: %w", rec.PromotionID, err)
	}
	for _, row := range rows {
		if row.PromotionID == rec.PromotionID {
			ch.Attempts = append(ch.Attempts, row)
		}
	}
	cell.Chain = ch
	switch a := ch.FirstBroken(); {
	case a == nil || rec.State == promotion.Halted || rec.State == promotion.Rejected:
	case rec.State == promotion.Accepted:
		cell.Waits = fmt.Sprintf("not proven: %s: %s", a.Name, a.Summary)
	default: // what it waits on, and that its chain is broken already
		cell.Waits += fmt.Sprintf("; chain broken at %s: %s", a.Name, a.Summary)
	}
	return history(ctx, c.repo, c.rev, rec)
}

// history is what env accepted for the record's app (ledger.History)
// and what rollback would say to each target (ledger.Pick).
func history(ctx context.Context, repo *gitops.Repo, rev string, rec *promotion.Record) (*EnvHistory, error) {
	env, cur := rec.Target.Environment, rec.Artifact.Digest
	l, err := ledger.History(ctx, repo, rev, rec.App, env)
	if err != nil {
		return nil, fmt.Errorf("reading what %s accepted for %s: %w", env, rec.App, err)
	}
	h := &EnvHistory{Environment: env, Current: cur}
	if p, err := ledger.Pick(l, ledger.Previous, cur, env); err != nil {
		h.PreviousRefused = err.Error()
	} else {
		h.Previous = p.Artifact.Digest
	}
	for _, a := range l.Accepted {
		cand := Candidate{Digest: a.Artifact.Digest, Tag: imageTag(a.Artifact.Image), PromotionID: a.PromotionID, Commit: a.Commit,
			Evidence: a.Evidence}
		if _, err := ledger.Pick(l, a.Artifact.Digest, cur, env); err != nil {
			cand.Refused = err.Error()
		}
		h.Accepted = append(h.Accepted, cand)
	}
	for _, u := range l.Unproven {
		cand := Candidate{Digest: u.Digest, PromotionID: u.PromotionID, Commit: u.Commit, Refused: u.Reason}
		if u.Digest != "" {
			if _, err := ledger.Pick(l, u.Digest, cur, env); err != nil {
				cand.Refused = err.Error()
			}
		}
		h.Unproven = append(h.Unproven, cand)
	}
	return h, nil
}

// readRecords reads every promotion/<app>/<env>.yaml at m.Rev, several
// at once (each read is a git process).
func (m *Model) readRecords(ctx context.Context, repo *gitops.Repo, cells map[string]*Cell) error {
	files, err := repo.ListTree(ctx, m.Rev, promotion.Dir)
	if err != nil {
		return fmt.Errorf("listing %s at %s: %w", promotion.Dir, m.Rev, err)
	}
	recs, problems := make([]*promotion.Record, len(files)), make([]error, len(files))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(judgeWorkers)
	for i, f := range files {
		app, env, ok := splitName(f, promotion.Dir, ".yaml")
		if !ok {
			continue
		}
		g.Go(func() error {
			rec, err := promotion.ReadRecord(gctx, repo, m.Rev, app, env)
			if exitcode.Code(err) == exitcode.Invalid {
				problems[i] = err
				return nil
			}
			recs[i] = rec
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for i, rec := range recs {
		if problems[i] != nil {
			m.Problems = append(m.Problems, problems[i].Error())
		}
		if rec != nil {
			cell := cellOf(cells, rec.App, rec.Target.Environment)
			cell.Record = rec
			cell.Age = m.Now.Sub(rec.History[len(rec.History)-1].At).Truncate(time.Second)
		}
	}
	return nil
}

// readPauses reads every breakglass/<env>/<app>.yaml at m.Rev.
func (m *Model) readPauses(ctx context.Context, repo *gitops.Repo, cells map[string]*Cell) error {
	files, err := repo.ListTree(ctx, m.Rev, breakglass.Dir)
	if err != nil {
		return fmt.Errorf("listing %s at %s: %w", breakglass.Dir, m.Rev, err)
	}
	for _, f := range files {
		env, app, ok := splitName(f, breakglass.Dir, ".yaml")
		if !ok {
			continue
		}
		p, err := breakglass.ReadRecord(ctx, repo, m.Rev, app, env)
		if exitcode.Code(err) == exitcode.Invalid {
			m.Problems = append(m.Problems, err.Error())
			continue
		}
		if err != nil {
			return err
		}
		if p != nil {
			cellOf(cells, app, env).Pause = p
		}
	}
	return nil
}

// splitName is the two names of dir/<a>/<b><ext> (ok false for any other
// file, or names that are not valid app or environment names).
func splitName(f, dir, ext string) (string, string, bool) {
	parts := strings.Split(f, "/")
	if len(parts) != 3 || parts[0] != dir || !strings.HasSuffix(parts[2], ext) {
		return "", "", false
	}
	a, b := parts[1], strings.TrimSuffix(parts[2], ext)
	return a, b, promotion.ValidName(a) && promotion.ValidName(b)
}

func cellOf(cells map[string]*Cell, app, env string) *Cell {
	k := Key(app, env)
	if cells[k] == nil {
		cells[k] = &Cell{App: app, Environment: env}
	}
	return cells[k]
}

// arrange orders the environments (the registry's and the records', an
// environment that verifies another before it) and fills the rows.
func (m *Model) arrange(reg *environment.Registry, cells map[string]*Cell, live map[string]Live) {
	envs := map[string]bool{}
	for _, e := range reg.Names() {
		envs[e] = true
	}
	apps := map[string]bool{}
	after := map[string][]string{} // env -> the environments verified by it
	for _, c := range cells {
		envs[c.Environment], apps[c.App] = true, true
		if r := c.Record; r != nil && r.VerifiedIn != nil && !r.VerifiedIn.IsPriorAcceptance() {
			after[r.VerifiedIn.Environment] = append(after[r.VerifiedIn.Environment], r.Target.Environment)
		}
	}
	m.Environments = flowOrder(envs, after)
	names := make([]string, 0, len(apps))
	for a := range apps {
		names = append(names, a)
	}
	sort.Strings(names)
	for _, a := range names {
		row := &App{Name: a}
		for _, e := range m.Environments {
			c := cells[Key(a, e)]
			if c == nil {
				c = &Cell{App: a, Environment: e}
			}
			c.drift(live)
			row.Cells = append(row.Cells, c)
		}
		m.Apps = append(m.Apps, row)
	}
}

// flowOrder sorts envs so that an environment comes before those it
// verifies (a cycle or no relation: by name).
func flowOrder(envs map[string]bool, after map[string][]string) []string {
	depth := map[string]int{}
	for range len(envs) { // longest path, bounded by the number of environments
		for from, tos := range after {
			for _, to := range tos {
				if to != from && depth[to] < depth[from]+1 && depth[from]+1 < len(envs) {
					depth[to] = depth[from] + 1
				}
			}
		}
	}
	out := make([]string, 0, len(envs))
	for e := range envs {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if depth[out[i]] != depth[out[j]] {
			return depth[out[i]] < depth[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}

// drift compares what runs with the digest the record declares.
func (c *Cell) drift(live map[string]Live) {
	l, ok := live[Key(c.App, c.Environment)]
	if !ok {
		return
	}
	c.Live = &l
	switch {
	case c.Record == nil:
		c.Drift = "no promotion record declares what runs"
	case len(l.Digests) == 0:
		c.Drift = "nothing runs"
	case !slices.Contains(l.Digests, c.Record.Artifact.Digest):
		c.Drift = fmt.Sprintf("runs %s, Git declares %s", strings.Join(l.Digests, ", "), c.Record.Artifact.Digest)
	}
}
