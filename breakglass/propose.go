package breakglass

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/render"
)

// WritebackOptions say where a write-back reads and writes.
type WritebackOptions struct {
	// Base is the commit of the base branch: the desired state now, and
	// the parent of the write-back commit.
	Base string
	// Path is the GitOps-root-relative environment overlay ("" for the
	// environment registry's, at Base; given, it must be the record's
	// environment's path of its app).
	Path string
	// Renderer is throughline's version (the overlay with the patches is
	// rendered with every policy rule before it is committed).
	Renderer string
	// Compare holds the field managers and temporary fields (its states
	// are filled in by the write-back).
	Compare Compare
}

// WritebackResult is what a write-back found and did.
type WritebackResult struct {
	Changes []Change `json:"changes"`
	Branch  string   `json:"branch,omitempty"`
	Commit  string   `json:"commit,omitempty"`
	Files   []string `json:"files,omitempty"`
	PR      string   `json:"pullRequest,omitempty"`
}

// Live is the live state a write-back compares: each live object by ID
// without version (absent: not found), and the objects the controller
// tracks.
type Live struct {
	Objects map[render.ID]map[string]any
	Tracked []render.ID
}

// LiveReader reads the live state of a write-back (live.ReadLive reads
// it from the cluster).
type LiveReader func(ctx context.Context, before []render.Object) (*Live, error)

// ProposeWriteback compares the desired state before the pause (the
// overlay rendered at the record's source revision), the live state
// readLive returns and the desired state at opts.Base, and commits the
// permanent live changes as patches in the overlay on the branch
// throughline/breakglass/<app>/<env>/<ticket> (never moved once it exists).
// With no permanent change nothing is committed and the result's Commit is
// opts.Base. live.ProposeWriteback reads the live state from a cluster.
func ProposeWriteback(ctx context.Context, r *gitops.Repo, rec *Record, opts WritebackOptions, readLive LiveReader) (*WritebackResult, error) {
	reg, err := promotion.ReadRegistry(ctx, r, opts.Base)
	if err != nil {
		return nil, err
	}
	if opts.Path, err = WritebackPath(reg, rec.App, rec.Environment, opts.Path); err != nil {
		return nil, err
	}
	src, err := SourceCommit(ctx, r, rec)
	if err != nil {
		return nil, err
	}
	before, err := renderAt(ctx, r, src, opts.Path)
	if err != nil {
		return nil, err
	}
	tree, err := r.Tree(ctx, opts.Base)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tree.Close() }()
	cmp := opts.Compare
	cmp.Before = before
	if cmp.Proposed, _, err = tree.Render(ctx, opts.Path); err != nil {
		return nil, err
	}
	live, err := readLive(ctx, before)
	if err != nil {
		return nil, err
	}
	cmp.Live, cmp.Tracked = live.Objects, live.Tracked
	cmp.AtPause = map[string][]metav1.ManagedFieldsEntry{}
	for _, o := range rec.Objects {
		cmp.AtPause[o.Kind+" "+o.Namespace+"/"+o.Name] = o.ManagedFields
	}
	plan, err := PlanWriteback(cmp, rec, opts.Path, func() (string, []byte, error) {
		kfile, err := tree.KustomizationFile(ctx, opts.Path)
		if err != nil {
			return "", nil, err
		}
		kdata, err := tree.OptionalFile(kfile)
		if err != nil {
			return "", nil, fmt.Errorf("reading %s: %w", kfile, err)
		}
		return kfile, kdata, nil
	})
	if err != nil {
		return nil, err
	}
	res := &WritebackResult{Changes: plan.Changes, Files: plan.Patches}
	if len(plan.Patches) == 0 {
		res.Commit = opts.Base
		return res, nil
	}
	if err := checkWriteback(ctx, tree, cmp, plan, opts, rec.Environment); err != nil {
		return nil, err
	}
	res.Branch, res.Commit, err = commitWriteback(ctx, r, rec, opts.Base, plan)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// renderAt renders the overlay at p as it is at rev.
func renderAt(ctx context.Context, r *gitops.Repo, rev, p string) ([]render.Object, error) {
	tree, err := r.Tree(ctx, rev)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tree.Close() }()
	objs, _, err := tree.Render(ctx, p)
	return objs, err
}

// checkWriteback writes the planned files into the exported tree and
// proves them: the overlay with the patches must render the live values
// (no permanent change left) and pass every policy rule.
func checkWriteback(ctx context.Context, tree *gitops.Tree, cmp Compare, plan *WritebackPlan, opts WritebackOptions, env string) error {
	for rel, data := range plan.Files {
		if err := tree.WriteFile(rel, data); err != nil {
			return fmt.Errorf("writing %s into the exported overlay: %w", rel, err)
		}
	}
	after, _, err := tree.Render(ctx, opts.Path)
	if err != nil {
		return fmt.Errorf("the overlay with the write-back does not render: %w", err)
	}
	if err := cmp.Reproduces(after); err != nil {
		return err
	}
	d, err := tree.Declare(ctx, opts.Path, env, opts.Renderer)
	if err != nil {
		return err
	}
	return refreshAcceptance(tree, opts.Path, d, opts.Renderer, plan)
}

// Reproduces checks that the rendered objects after, the overlay with the
// write-back patches, carry every permanent live change of c: compared
// again with after as the desired state, no change may be permanent.
func (c Compare) Reproduces(after []render.Object) error {
	check := Compare{Before: after, Live: c.Live, Proposed: after, AtPause: c.AtPause,
		ControllerManagers: c.ControllerManagers, OtherWriters: c.OtherWriters, Temporary: c.Temporary}
	left, err := check.Run()
	if err != nil {
		return err
	}
	for _, ch := range left {
		if ch.Class == Permanent {
			return fmt.Errorf("the write-back patches do not reproduce the live state: %s", ch)
		}
	}
	return nil
}

// commitWriteback commits the planned files on base and points the
// write-back branch at the commit; a branch that exists already is not
// moved.
func commitWriteback(ctx context.Context, r *gitops.Repo, rec *Record, base string, plan *WritebackPlan) (branch, sha string, err error) {
	msg := fmt.Sprintf("breakglass write-back %s in %s (%s)\n\nTicket: %s\nOperator: %s\nSource-Revision: %s\n",
		rec.App, rec.Environment, rec.Ticket, rec.Ticket, rec.Operator, rec.SourceRevision)
	for _, ch := range plan.Changes {
		msg += "Change: " + ch.String() + "\n"
	}
	sha, err = r.Commit(ctx, base, plan.Files, msg)
	if err != nil {
		return "", "", err
	}
	branch = WritebackBranch(rec)
	if err := r.SetBranch(ctx, branch, "", sha); err != nil {
		return "", "", fmt.Errorf("branch %s exists already (a write-back was proposed; merge or delete it): %w", branch, err)
	}
	return branch, sha, nil
}

// WritebackBranch is the branch of the record's write-back:
// throughline/breakglass/<app>/<env>/<ticket>.
func WritebackBranch(rec *Record) string {
	return "throughline/breakglass/" + rec.App + "/" + rec.Environment + "/" + slug(rec.Ticket)
}

// WritebackPlan is what a write-back writes into the overlay.
type WritebackPlan struct {
	// Changes are every live change, classified.
	Changes []Change
	// Files are the GitOps-root-relative files to write: one patch per
	// object with permanent changes, and the kustomization listing them
	// (none without a permanent change).
	Files map[string][]byte
	// Patches are the patch files, in the order of the changes.
	Patches []string
}

// Kustomization returns the overlay's kustomization file
// (GitOps-root-relative) and its text.
type Kustomization func() (file string, data []byte, err error)

// PlanWriteback classifies the live changes of cmp (its states filled in)
// and writes the permanent ones as strategic-merge patches
// breakglass-<kind>-<name>.yaml in the overlay dir, added to the patches:
// of its kustomization (comments kept; read only when there is a patch to
// add). It reads and writes nothing else.
func PlanWriteback(cmp Compare, rec *Record, dir string, kustomization Kustomization) (*WritebackPlan, error) {
	changes, err := cmp.Run()
	if err != nil {
		return nil, err
	}
	plan := &WritebackPlan{Changes: changes, Files: map[string][]byte{}}
	patches := Patches(changes)
	if len(patches) == 0 {
		return plan, nil
	}
	SetAPIVersion(patches, cmp.Before)
	var names []string
	for _, p := range patches {
		id := p.ID()
		name := "breakglass-" + slug(id.Kind) + "-" + slug(id.Name) + ".yaml"
		var buf bytes.Buffer
		fmt.Fprintf(&buf, "# Written back by throughline breakglass writeback (ticket %s, operator %s).\n", rec.Ticket, rec.Operator)
		if err := render.EncodeYAML(&buf, []render.Object{p}); err != nil {
			return nil, fmt.Errorf("encoding the write-back patch of %s: %w", id, err)
		}
		rel := path.Join(dir, name)
		plan.Files[rel] = buf.Bytes()
		plan.Patches = append(plan.Patches, rel)
		names = append(names, name)
	}
	kfile, kdata, err := kustomization()
	if err != nil {
		return nil, err
	}
	kdata, err = AddPatches(kdata, kfile, names)
	if err != nil {
		return nil, err
	}
	plan.Files[kfile] = kdata
	return plan, nil
}

var slugRE = regexp.MustCompile(`[^a-z0-9.-]+`)

func slug(s string) string {
	return strings.Trim(slugRE.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// AddPatches appends "- path: NAME" entries to the patches: list of the
// kustomization data (file rel in errors; the list is created when
// missing), keeping comments; a name already listed is not added again.
func AddPatches(data []byte, rel string, names []string) ([]byte, error) {
	rn, err := kyaml.Parse(string(data))
	if err != nil {
		return nil, exitcode.InvalidFile(rel, err)
	}
	list, err := rn.Pipe(kyaml.LookupCreate(kyaml.SequenceNode, "patches"))
	if err != nil {
		return nil, exitcode.InvalidFile(rel, err)
	}
	have := map[string]bool{}
	for _, e := range list.Content() {
		for i := 0; i+1 < len(e.Content); i += 2 {
			if e.Content[i].Value == "path" {
				have[e.Content[i+1].Value] = true
			}
		}
	}
	for _, n := range names {
		if have[n] {
			continue
		}
		entry := kyaml.NewMapRNode(&map[string]string{"path": n})
		if err := list.PipeE(kyaml.Append(entry.YNode())); err != nil {
			return nil, exitcode.InvalidFile(rel, err)
		}
	}
	s, err := rn.String()
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", rel, err)
	}
	return []byte(s), nil
}

// PullRequestBody is the description of the write-back's pull request: the
// pause and every classified change.
func PullRequestBody(rec *Record, res *WritebackResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Break-glass write-back of `%s` in `%s` (ticket %s, paused by %s at %s from revision `%s`).\n\n",
		rec.App, rec.Environment, rec.Ticket, rec.Operator, rec.PausedAt.Format("2006-01-02T15:04:05Z"), rec.SourceRevision)
	b.WriteString("| class | object | field | desired before | live |\n|---|---|---|---|---|\n")
	for _, c := range res.Changes {
		fmt.Fprintf(&b, "| %s | %s | `%s` | `%v` | `%v` |\n", c.Class, c.Object, c.Path, c.shown(c.Before), c.shown(c.Live))
	}
	b.WriteString("\nOnly the permanent changes are in this PR; resume (`throughline breakglass resume`) waits for its merge.\n")
	return b.String()
}
