package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/registry"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/rollback"
)

// checkReport is the PR job's verdict.
type checkReport struct {
	Base        string             `json:"base"`
	Head        string             `json:"head"`
	PromotionID string             `json:"promotionId,omitempty"`
	App         string             `json:"app,omitempty"`
	Environment string             `json:"environment,omitempty"`
	Digest      string             `json:"digest,omitempty"`
	State       promotion.State    `json:"state,omitempty"`
	Files       []string           `json:"files"`
	Changes     []promotion.Change `json:"changes"`
	Classes     map[string]int     `json:"classes"`
	Refusals    []string           `json:"refusals"`
	OK          bool               `json:"ok"`
}

func newPromoteCheckCommand(g *globals, stdout io.Writer) *cobra.Command {
	var (
		repo, base, head, output string
		driftFiles               []string
	)
	cmd := &cobra.Command{
		Use:   "check --repo DIR --base REV --head REV",
		Short: "The PR job: refuse a promotion change that is more than the verified, approved digest",
		Long: `Compare the pull request's head with its base. The change may touch only the
target overlay's image digest (its kustomization's images: entry) and the
target's promotion record, plus the kustomization keys the policy file
(throughline-policy.yaml: allowParameters) allows.

The target is rendered at both revisions and every difference is classified:
artifact (images), capacity (replicas, resources, HPA), routing (Ingress,
Gateway, HTTPRoute hosts), permission (ServiceAccount, Role/ClusterRole and
bindings), boundary (namespace, PVC, ResourceQuota, LimitRange, Secret and
ExternalSecret references), other. Boundary changes and objects that name
another environment are refused unless the policy allows them.

Also refused: no staging evidence for the digest (the record is not VERIFIED,
or the source environment's record is not ACCEPTED for it), the source
environment's desired revision not matching, a rollback whose prior
acceptance (verifiedIn of kind prior-acceptance) the base branch's history
does not back (the named commit is not in it, its record is not ACCEPTED for
that attempt and digest, or its evidence file is missing or disagrees), a
digest that is not the verified one, a tag (any unpinned image), a rendered
hash other than the approved one, an approval that is missing, expired or
bound to other inputs, a target that moved on, a moved tag (drift records
under drift/ and --drift-record).

Exit codes: 0 pass; 3 refused (every reason listed); 4 a record, policy or
manifest is invalid.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if base == "" || head == "" {
				return exitcode.Usagef("--base and --head are required")
			}
			if output != "text" && output != "json" {
				return exitcode.Usagef("-o %q: want text or json", output)
			}
			ctx := cmd.Context()
			r, err := gitrepo.Open(ctx, repo)
			if err != nil {
				return &exitcode.InvalidInput{File: repo, Err: err}
			}
			rep, err := checkPromotion(ctx, &promoteRepo{Repo: r}, base, head, driftFiles, time.Now())
			if err != nil {
				return err
			}
			g.log.Debug().Int("refusals", len(rep.Refusals)).Msg("checked")
			if output == "json" {
				if err := promoteWriteJSON(stdout, rep); err != nil {
					return err
				}
			} else {
				printCheck(stdout, rep)
			}
			if !rep.OK {
				return &exitcode.Refusal{Rule: "promotion-check", Reason: fmt.Sprintf("promotion %s refused: %d reason(s) (listed on stdout)", rep.PromotionID, len(rep.Refusals))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&repo, "repo", ".", "the GitOps repository")
	f.StringVar(&base, "base", "", "the PR's base revision")
	f.StringVar(&head, "head", "", "the PR's head revision")
	f.StringArrayVar(&driftFiles, "drift-record", nil, "a drift record (throughline drift record) to check the artifact's tag against (repeatable)")
	f.StringVarP(&output, "output", "o", "text", "output: text or json")
	return cmd
}

func printCheck(w io.Writer, rep *checkReport) {
	fmt.Fprintf(w, "promotion %s: %s %s -> %s (state %s)\n", rep.PromotionID, rep.App, rep.Digest, rep.Environment, rep.State)
	fmt.Fprintf(w, "files changed (%d):\n", len(rep.Files))
	for _, f := range rep.Files {
		fmt.Fprintln(w, "  "+f)
	}
	fmt.Fprintf(w, "rendered differences (%d):\n", len(rep.Changes))
	for _, c := range rep.Changes {
		fmt.Fprintln(w, "  "+c.String())
	}
	if rep.OK {
		fmt.Fprintln(w, "OK: only the verified, approved artifact changes")
		return
	}
	for _, r := range rep.Refusals {
		fmt.Fprintln(w, "REFUSED "+r)
	}
}

func checkPromotion(ctx context.Context, r *promoteRepo, baseArg, headArg string, driftFiles []string, now time.Time) (*checkReport, error) {
	base, err := r.Resolve(ctx, baseArg)
	if err != nil {
		return nil, exitcode.Usagef("--base %s: %v", baseArg, err)
	}
	head, err := r.Resolve(ctx, headArg)
	if err != nil {
		return nil, exitcode.Usagef("--head %s: %v", headArg, err)
	}
	rep := &checkReport{Base: base, Head: head, Classes: map[string]int{}, Changes: []promotion.Change{}, Refusals: []string{}}
	refuse := func(format string, args ...any) { rep.Refusals = append(rep.Refusals, fmt.Sprintf(format, args...)) }
	files, err := r.Changed(ctx, base, head)
	if err != nil {
		return nil, err
	}
	rep.Files = files
	// The record names the promotion.
	var recFiles []string
	for _, f := range files {
		if rel, ok := r.Rel(f); ok && strings.HasPrefix(rel, promotion.Dir+"/") && strings.Count(rel, "/") == 2 && strings.HasSuffix(rel, ".yaml") {
			recFiles = append(recFiles, rel)
		}
	}
	if len(recFiles) != 1 {
		refuse("a promotion change carries exactly one promotion record, this one changes %d (%s)", len(recFiles), strings.Join(recFiles, ", "))
		return finishCheck(rep), nil
	}
	parts := strings.Split(recFiles[0], "/")
	app, env := parts[1], strings.TrimSuffix(parts[2], ".yaml")
	rec, err := r.readRecord(ctx, head, app, env)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		refuse("%s is deleted: a record is never removed, a new attempt replaces it", recFiles[0])
		return finishCheck(rep), nil
	}
	rep.PromotionID, rep.App, rep.Environment, rep.Digest, rep.State = rec.PromotionID, app, env, rec.Artifact.Digest, rec.State
	prev, err := r.readRecord(ctx, base, app, env)
	if err != nil {
		return nil, err
	}
	if err := promotion.CheckUpdate(prev, rec); err != nil {
		refuse("%s: %v", recFiles[0], err)
	}
	pol, err := r.readPolicy(ctx, head)
	if err != nil {
		return nil, err
	}

	bt, cleanB, err := r.export(ctx, base)
	if err != nil {
		return nil, err
	}
	defer cleanB()
	ht, cleanH, err := r.export(ctx, head)
	if err != nil {
		return nil, err
	}
	defer cleanH()

	// Files: only the record and the target overlay's kustomization.
	kfile, err := kustomizationFile(ctx, ht.root, rec.Target.Path)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		rel, inside := r.Rel(f)
		switch {
		case inside && rel == recFiles[0]:
		case inside && rel == kfile:
			for _, k := range kustomizationChanges(ctx, bt.root, ht.root, kfile) {
				if !pol.Allows(k) {
					refuse("%s: %s changed: a promotion changes only the image digest (allowParameters in %s permits more)", kfile, k, promotion.PolicyFile)
				}
			}
		default:
			refuse("%s changed: a promotion may change only %s (its images: digest) and %s", f, kfile, recFiles[0])
		}
	}

	// Render the target before and after.
	before, baseHash, err := promoteRawRender(ctx, bt.root, rec.Target.Path)
	if err != nil {
		return nil, err
	}
	after, _, err := promoteRawRender(ctx, ht.root, rec.Target.Path)
	if err != nil {
		return nil, err
	}
	rep.Changes = promotion.Classify(before, after)
	for c, n := range promotion.Classes(rep.Changes) {
		rep.Classes[string(c)] = n
	}
	var crossed []string
	for _, c := range rep.Changes {
		if c.Class == promotion.ClassBoundary {
			crossed = append(crossed, c.String())
		}
	}
	if len(crossed) > 0 && !pol.AllowBoundary() {
		refuse("boundary fields crossed (allowBoundary in %s permits it):\n    %s", promotion.PolicyFile, strings.Join(crossed, "\n    "))
	}
	if !pol.AllowCross() {
		for _, x := range crossEnvironment(ctx, ht.root, rec.Target.Path, env, before, after) {
			refuse("cross-environment object: %s", x)
		}
	}

	hd, derr := promoteDeclare(ctx, ht.root, rec.Target.Path, env)
	var refusal *policy.Refusal
	switch {
	case errors.As(derr, &refusal):
		for _, v := range refusal.Violations {
			refuse("policy: %s", v.String())
		}
	case derr != nil:
		return nil, derr
	default:
		if _, others, n := artifactImages(hd, rec.Artifact.Image); n == 0 {
			refuse("the target renders no container of the artifact %s", rec.Artifact.Image)
		} else if len(others) > 0 {
			refuse("digest not the verified one %s: %s", rec.Artifact.Digest, strings.Join(others, "; "))
		}
		if hd.Hash != rec.Target.RenderedHash {
			refuse("rendered hash %s is not the one proposed and approved (%s)", hd.Hash, rec.Target.RenderedHash)
		}
	}

	// Gates: evidence, approval.
	switch {
	case rec.VerifiedIn == nil:
		refuse("no staging evidence for digest %s: %s is %s, not VERIFIED", rec.Artifact.Digest, recFiles[0], rec.State)
	case rec.VerifiedIn.IsPriorAcceptance():
		// A rollback: the claim must be backed by the base's history.
		var re *exitcode.Refusal
		if err := rollback.CheckPrior(ctx, r.Repo, base, rec); errors.As(err, &re) {
			refuse("%s", re.Reason)
		} else if err != nil {
			return nil, err
		}
	default:
		src, err := r.readRecord(ctx, head, app, rec.VerifiedIn.Environment)
		if err != nil {
			return nil, err
		}
		if why := sourceMismatch(src, rec, rec.VerifiedIn.Environment, rec.VerifiedIn.DesiredRevision); why != "" {
			refuse("%s", why)
		}
	}
	switch {
	case rec.State == promotion.Halted || rec.State == promotion.Rejected:
		refuse("%s is %s: %s (a fix makes a new candidate)", rec.PromotionID, rec.State, rec.Reason)
	case rec.Approval == nil:
		refuse("%s is not approved (state %s): run throughline promote approve", rec.PromotionID, rec.State)
	case hd != nil:
		in := rec.InputFor(buildVersion())
		in.RenderedHash = hd.Hash
		if why := rec.ApprovalVoid(in, baseHash, now); why != "" {
			refuse("approval void: %s", why)
		}
	}

	// A moved tag.
	for _, d := range driftOf(ctx, ht.root, driftFiles, rec) {
		refuse("%s", d)
	}
	return finishCheck(rep), nil
}

func finishCheck(rep *checkReport) *checkReport {
	rep.OK = len(rep.Refusals) == 0
	return rep
}

// kustomizationChanges lists the top-level keys of the kustomization that
// differ between the two trees, the images: digests (a newTag "tag@digest",
// whose tag is informative only, and digest:) left out.
func kustomizationChanges(ctx context.Context, baseRoot, headRoot, kfile string) []string {
	if ctx.Err() != nil {
		return []string{"<cancelled>"}
	}
	load := func(root string) map[string]any {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(kfile)))
		if err != nil {
			return nil
		}
		var m map[string]any
		if sigyaml.Unmarshal(data, &m) != nil {
			return map[string]any{"<unparseable>": string(data)}
		}
		if imgs, ok := m["images"].([]any); ok {
			for _, e := range imgs {
				if em, ok := e.(map[string]any); ok {
					if nt, ok := em["newTag"].(string); ok && strings.Contains(nt, "@") {
						// The tag before a digest is informative only.
						em["newTag"] = "<tag>@<digest>"
					}
					if _, ok := em["digest"]; ok {
						em["digest"] = "<digest>"
					}
				}
			}
		}
		return m
	}
	a, b := load(baseRoot), load(headRoot)
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []string
	for k := range keys {
		if !reflect.DeepEqual(a[k], b[k]) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// crossEnvironment lists the after-objects that name another environment
// (a sibling overlay) in their namespace or a routing host, where the
// before-objects did not.
func crossEnvironment(ctx context.Context, root, target, env string, before, after []render.Object) []string {
	entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(path.Dir(target))))
	if err != nil || ctx.Err() != nil {
		return nil
	}
	var others []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != env && len(e.Name()) > 2 {
			others = append(others, e.Name())
		}
	}
	mentions := func(objs []render.Object) map[string]bool {
		m := map[string]bool{}
		for _, o := range objs {
			id := o.ID()
			vals := []string{id.Namespace}
			vals = append(vals, routingHosts(o.Map)...)
			for _, v := range vals {
				for _, tok := range strings.FieldsFunc(v, func(r rune) bool { return r == '-' || r == '.' || r == '/' }) {
					for _, other := range others {
						if tok == other {
							m[id.String()+" names "+other+" ("+v+")"] = true
						}
					}
				}
			}
		}
		return m
	}
	was := mentions(before)
	var out []string
	for k := range mentions(after) {
		if !was[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// hosts collects every host / hostname / hostnames value of an object.
func routingHosts(v any) []string {
	var out []string
	var walk func(any, string)
	walk = func(v any, key string) {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				walk(x, k)
			}
		case []any:
			for _, x := range t {
				walk(x, key)
			}
		case string:
			if key == "host" || key == "hostname" || key == "hostnames" || key == "hosts" {
				out = append(out, t)
			}
		}
	}
	walk(v, "")
	return out
}

// driftOf checks the drift records of the artifact's repository (files
// under drift/ at head, plus the given files) offline against each other
// and against the record's digest: a tag seen at two digests, or a tag of
// the artifact that resolved to another digest, moved.
func driftOf(ctx context.Context, root string, extra []string, rec *promotion.Record) []string {
	var out []string
	var files []string
	_ = filepath.WalkDir(filepath.Join(root, "drift"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return nil
	})
	files = append(files, extra...)
	pinned, err := policy.CheckImage(rec.Artifact.Image)
	if err != nil {
		return []string{fmt.Sprintf("artifact.image %q: %v", rec.Artifact.Image, err)}
	}
	var records []registry.SourcedRecord
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			out = append(out, fmt.Sprintf("drift record %s: %v", f, err))
			continue
		}
		name := f
		if rel, err := filepath.Rel(root, f); err == nil && !strings.HasPrefix(rel, "..") {
			name = filepath.ToSlash(rel)
		}
		rr, err := registry.ParseRecord(name, data)
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		if rr.Repository != pinned.Repository {
			continue
		}
		records = append(records, registry.SourcedRecord{Record: rr, File: name})
		if pinned.Tag != "" && rr.Tag == pinned.Tag && rr.Digest != rec.Artifact.Digest {
			out = append(out, fmt.Sprintf("moved tag: %s resolved to %s (%s at %s), the artifact is %s", rr.Reference, rr.Digest, name, rr.ResolvedAt.Format(time.RFC3339), rec.Artifact.Digest))
		}
	}
	rep := registry.CheckDrift(ctx, records, nil)
	for _, d := range rep.Drifts {
		out = append(out, "moved tag: "+d.Error())
	}
	return out
}
