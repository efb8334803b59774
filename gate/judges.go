package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/render"
)

// RuleJudges is the rule of a change to what judges a protected environment (its
// registry entry, the files it names, the allowed signers, the allow-list
// entries that apply to it, the runtime checks of an environment it
// promotes from) without its approvers' signed approvals of that change.
const RuleJudges = "judges-change"

// RuleApprovalExpired is the rule of a policy approval that expired.
const RuleApprovalExpired = "approval-expired"

// JudgesDiff is how a change moves what judges one environment.
type JudgesDiff struct {
	Environment string `json:"environment"`
	// Protected is whether the environment is protected at the base: then
	// the change needs Required signed approvals of Change.
	Protected bool `json:"protected"`
	// Change is the hash the approvals are bound to: sha256 over the
	// environment and every change, old -> new.
	Change string `json:"change"`
	// Changes are the change, one finding (RuleJudges) per fact.
	Changes []Finding `json:"changes"`
	// Required and Approved count the signed approvals (protected only).
	Required int `json:"required,omitempty"`
	Approved int `json:"approved,omitempty"`
}

// Words are the changes in words, one line each.
func (d *JudgesDiff) Words() []string {
	out := make([]string, 0, len(d.Changes))
	for _, f := range d.Changes {
		out = append(out, f.Reason)
	}
	return out
}

// fact is one thing that judges an environment: a field of a file, or a
// file's content (field "").
type fact struct{ file, field string }

// judgeFacts is what judges one environment at one revision, fact by fact,
// each value in words.
type judgeFacts map[fact]string

// JudgesChange is how the change from base to head (from their merge
// base, as the every-PR check reads it) moves what judges env: nil when it
// does not. The approvers are the base's. policy approve writes the
// approval of exactly this Change.
func JudgesChange(ctx context.Context, r *gitops.Repo, base, head, env string) (*JudgesDiff, error) {
	mb, err := r.MergeBase(ctx, base, head)
	if err != nil {
		return nil, exitcode.Usagef("%s and %s have no common history: %v", base, head, err)
	}
	reg, err := promotion.ReadRegistry(ctx, r, base)
	if err != nil {
		return nil, err
	}
	return judgesChange(ctx, r, reg, trees{}, mb, head, env)
}

// trees are the files of a revision's tree, listed once per revision for
// every environment the check judges.
type trees map[string][]string

func (t trees) files(ctx context.Context, r *gitops.Repo, rev string) ([]string, error) {
	if f, ok := t[rev]; ok {
		return f, nil
	}
	f, err := r.ListTree(ctx, rev, ".")
	if err != nil {
		return nil, err
	}
	t[rev] = f
	return f, nil
}

// judgesChange is JudgesChange with the base's registry and the merge base.
func judgesChange(ctx context.Context, r *gitops.Repo, reg *environment.Registry, t trees, mb, head, env string) (*JudgesDiff, error) {
	before, err := readJudges(ctx, r, t, mb, env, nil)
	if err != nil {
		return nil, err
	}
	after, err := readJudges(ctx, r, t, head, env, before.apps)
	if err != nil {
		return nil, err
	}
	d := &JudgesDiff{Environment: env, Changes: diffFacts(env, before.facts, after.facts)}
	if len(d.Changes) == 0 {
		return nil, nil
	}
	if e, ok := reg.Get(env); ok {
		d.Protected, d.Required = e.Protected, e.RequiredApprovals()
	}
	d.Change = changeHash(env, d.Changes)
	return d, nil
}

// judgesAt is what judges an environment at one revision, and its apps.
type judgesAt struct {
	facts judgeFacts
	// apps are the environment's apps (those whose source checks judge it).
	apps []string
}

// readJudges reads what judges env at rev: the policy's top-level fields
// and env's registry entry, field by field (every field, present and
// future: the entry is compared as its JSON), the allowed-signers file by
// principal, the trust files the entry names, the allow-list entries in
// env's scope, and the runtime checks file of each of apps' overlays in
// every environment env promotes from (apps nil: env's own apps at rev),
// and what deploys it: the content of every file its controllers patterns
// claim (its Applications, Kustomizations, AppProject, the service account
// and role bindings Flux applies as).
func readJudges(ctx context.Context, r *gitops.Repo, t trees, rev, env string, apps []string) (*judgesAt, error) {
	pol, err := promotion.ReadPolicy(ctx, r, rev)
	if err != nil {
		return nil, err
	}
	out := &judgesAt{facts: judgeFacts{}, apps: apps}
	if pol == nil {
		return out, nil
	}
	top := *pol
	top.Environments = nil
	if err := flatten(out.facts, promotion.PolicyFile, "", top); err != nil {
		return nil, err
	}
	e, registered := pol.Environments[env]
	if registered {
		if err := flatten(out.facts, promotion.PolicyFile, "environments."+env, e); err != nil {
			return nil, err
		}
	}
	if pol.AllowedSigners != "" {
		if err := signerFacts(ctx, r, rev, pol.AllowedSigners, out.facts); err != nil {
			return nil, err
		}
	}
	if registered && e.Trust != nil {
		for _, f := range e.Trust.Files() {
			if err := fileFact(ctx, r, rev, f, "", out.facts); err != nil {
				return nil, err
			}
		}
	}
	if err := allowListFacts(ctx, r, rev, env, out.facts); err != nil {
		return nil, err
	}
	if !registered {
		return out, nil
	}
	reg, err := promotion.Registry(pol)
	if err != nil {
		return nil, err
	}
	files, err := t.files(ctx, r, rev)
	if err != nil {
		return nil, err
	}
	if e, ok := reg.Get(env); ok {
		for _, f := range files {
			if e.OwnsController(f) {
				if err := fileFact(ctx, r, rev, f, "", out.facts); err != nil {
					return nil, err
				}
			}
		}
	}
	overlays := overlaysAt(reg, files)
	if out.apps == nil {
		out.apps = sortedApps(overlays[env])
	}
	for _, src := range sources(reg, env) {
		for _, app := range out.apps {
			k := fact{field: fmt.Sprintf("runtime checks of %s in %s", app, src)}
			dir, ok := overlays[src][app]
			if !ok {
				continue // no evidence of app comes from src
			}
			file := path.Join(dir, render.ChecksFile)
			v, err := fileDigest(ctx, r, rev, file)
			if err != nil {
				return nil, err
			}
			out.facts[k] = file + " " + v
		}
	}
	return out, nil
}

// sources are the environments env promotes from: its promotesFrom, every
// other environment when it lists none (it then takes promotions from any).
func sources(reg *environment.Registry, env string) []string {
	e, _ := reg.Get(env)
	if len(e.PromotesFrom) > 0 {
		return e.PromotesFrom
	}
	var out []string
	for _, n := range reg.Names() {
		if n != env {
			out = append(out, n)
		}
	}
	return out
}

// overlaysAt maps each environment to its apps' overlay directories among
// files (every directory with a kustomization the registry places).
func overlaysAt(reg *environment.Registry, files []string) map[string]map[string]string {
	out := map[string]map[string]string{}
	names := konfig.RecognizedKustomizationFileNames()
	for _, f := range files {
		if !slices.Contains(names, path.Base(f)) {
			continue
		}
		app, env, _, ok := reg.Locate(path.Dir(f))
		if !ok {
			continue
		}
		if out[env] == nil {
			out[env] = map[string]string{}
		}
		out[env][app] = path.Dir(f)
	}
	return out
}

func sortedApps(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for app := range m {
		out = append(out, app)
	}
	sort.Strings(out)
	return out
}

// flatten adds v's JSON leaves to facts, each as its field path under
// prefix (a.b[0].c): every field is compared, including those this code
// does not know of.
func flatten(facts judgeFacts, file, prefix string, v any) error {
	js, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s %s: %w", file, prefix, err)
	}
	var tree any
	if err := json.Unmarshal(js, &tree); err != nil {
		return fmt.Errorf("decoding %s %s: %w", file, prefix, err)
	}
	var walk func(field string, n any)
	walk = func(field string, n any) {
		switch n := n.(type) {
		case map[string]any:
			for k, c := range n {
				walk(strings.TrimPrefix(field+"."+k, "."), c)
			}
		case []any:
			for i, c := range n {
				walk(fmt.Sprintf("%s[%d]", field, i), c)
			}
		case string:
			facts[fact{file: file, field: field}] = strconv.Quote(n)
		case nil:
		default:
			facts[fact{file: file, field: field}] = fmt.Sprint(n)
		}
	}
	walk(prefix, tree)
	return nil
}

// fileFact adds the content of file at rev as one fact (fileDigest).
func fileFact(ctx context.Context, r *gitops.Repo, rev, file, field string, facts judgeFacts) error {
	v, err := fileDigest(ctx, r, rev, file)
	if err != nil {
		return err
	}
	facts[fact{file: file, field: field}] = v
	return nil
}

// fileDigest is the content of file at rev in words: its sha256 and size,
// "absent" when there is no such file.
func fileDigest(ctx context.Context, r *gitops.Repo, rev, file string) (string, error) {
	data, err := r.ReadFile(ctx, rev, file)
	switch {
	case errors.Is(err, gitrepo.ErrNotFound):
		return "absent", nil
	case err != nil:
		return "", err
	}
	sum := sha256.Sum256(data)
	return fmt.Sprintf("sha256:%s (%d bytes)", hex.EncodeToString(sum[:])[:16], len(data)), nil
}

// signerFacts adds the allowed-signers file as one fact per principal (its
// keys and options), or as its content where it does not parse.
func signerFacts(ctx context.Context, r *gitops.Repo, rev, file string, facts judgeFacts) error {
	data, err := r.ReadFile(ctx, rev, file)
	if errors.Is(err, gitrepo.ErrNotFound) {
		facts[fact{file: file}] = "absent"
		return nil
	}
	if err != nil {
		return err
	}
	signers, err := gitrepo.ParseAllowedSigners(data)
	if err != nil {
		return fileFact(ctx, r, rev, file, "", facts)
	}
	keys := map[string][]string{}
	for _, s := range signers {
		k := s.KeyType + " " + tail(s.Key)
		if s.Options != "" {
			k = s.Options + " " + k
		}
		for _, p := range s.Principals {
			keys[p] = append(keys[p], k)
		}
	}
	for p, ks := range keys {
		sort.Strings(ks)
		facts[fact{file: file, field: "key of " + p}] = strings.Join(ks, ", ")
	}
	return nil
}

// tail is a key or hash shortened for words: its last 12 characters (a
// commit is shortened from the front, gitrepo.Short).
func tail(key string) string {
	if len(key) <= 16 {
		return key
	}
	return "…" + key[len(key)-12:]
}

// allowListFacts adds the allow-list entries in env's scope, one fact each.
func allowListFacts(ctx context.Context, r *gitops.Repo, rev, env string, facts judgeFacts) error {
	data, err := r.ReadFile(ctx, rev, policy.AllowListFile)
	if errors.Is(err, gitrepo.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	al, err := policy.ParseAllowList(data, policy.AllowListFile)
	if err != nil {
		return exitcode.InvalidFile(policy.AllowListFile, err)
	}
	in := func(envs []string) bool { return len(envs) == 0 || slices.Contains(envs, env) }
	for _, im := range al.Images {
		if in(im.Environments) {
			facts[fact{file: policy.AllowListFile, field: fmt.Sprintf("images[pattern=%s]", im.Pattern)}] = strconv.Quote(im.Reason)
		}
	}
	for _, s := range al.Secrets {
		if in(s.Environments) {
			facts[fact{file: policy.AllowListFile, field: fmt.Sprintf("secrets[%s/%s]", s.Namespace, s.Name)}] = strconv.Quote(s.Reason)
		}
	}
	return nil
}

// diffFacts is every fact whose value differs, sorted by file and field.
func diffFacts(env string, before, after judgeFacts) []Finding {
	keys := map[fact]bool{}
	for k := range before {
		keys[k] = true
	}
	for k := range after {
		keys[k] = true
	}
	sorted := make([]fact, 0, len(keys))
	for k := range keys {
		if before[k] != after[k] {
			sorted = append(sorted, k)
		}
	}
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].file != sorted[j].file {
			return sorted[i].file < sorted[j].file
		}
		return sorted[i].field < sorted[j].field
	})
	out := make([]Finding, 0, len(sorted))
	none := func(s string) string {
		if s == "" {
			return "(none)"
		}
		return s
	}
	for _, k := range sorted {
		what := strings.TrimSpace(k.file + " " + k.field)
		out = append(out, Finding{Rule: RuleJudges, Environment: env, File: k.file, Field: k.field, Old: none(before[k]), New: none(after[k]),
			Reason: fmt.Sprintf("%s: %s -> %s", what, none(before[k]), none(after[k]))})
	}
	return out
}

// changeHash is sha256 over env and every change, old -> new: the input an
// approval of the change is bound to.
func changeHash(env string, changes []Finding) string {
	type entry struct{ File, Field, Old, New string }
	in := struct {
		Environment string
		Changes     []entry
	}{Environment: env}
	for _, f := range changes {
		in.Changes = append(in.Changes, entry{f.File, f.Field, f.Old, f.New})
	}
	js, _ := json.Marshal(in) // strings only: cannot fail
	sum := sha256.Sum256(js)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// judges is the repository check's step for what judges: every registered
// environment (at the base) whose judges the change moves is listed in
// the report; a protected one's change is refused, change by change, unless
// the pull request carries its approvers' signed approvals of it.
func (c *repoCheck) judges(ctx context.Context) error {
	t := trees{}
	for _, name := range c.reg.Names() {
		d, err := judgesChange(ctx, c.r, c.reg, t, c.rep.MergeBase, c.rep.Head, name)
		if err != nil {
			return err
		}
		if d == nil {
			continue
		}
		c.rep.Judges = append(c.rep.Judges, *d)
		if !d.Protected {
			continue
		}
		jd := &c.rep.Judges[len(c.rep.Judges)-1]
		why, err := c.policyApprovals(ctx, jd)
		if err != nil {
			return err
		}
		if len(why) == 0 {
			continue
		}
		for _, f := range d.Changes {
			f.Reason = fmt.Sprintf("%s (%s is protected: what judges it changes only with %d signed approvals of change %s)", f.Reason, name,
				d.Required, tail(d.Change))
			c.rep.refuse(f)
		}
		for _, f := range why {
			c.rep.refuse(f)
		}
	}
	return nil
}

// policyApprovals counts the signed approvals of d the pull request
// carries (d.Approved) and says why they are not enough (nil when they
// are): the approvals of env's policy approval file at head for d.Change,
// each written by one commit of the pull request signed by its approver,
// an approver of env at the base who wrote none of the change, unexpired.
func (c *repoCheck) policyApprovals(ctx context.Context, d *JudgesDiff) ([]Finding, error) {
	env := d.Environment
	file := promotion.PolicyApprovalPath(env)
	how := fmt.Sprintf("throughline policy approve --environment %s --branch <this pull request's branch> --expires 24h", env)
	if d.Required == 0 {
		return []Finding{{Rule: RuleJudges, Environment: env, File: c.reg.File(), Field: "environments." + env + ".approvers",
			Reason: fmt.Sprintf("%s is protected and lists no approvers at the base: a change to what judges it cannot be approved", env)}}, nil
	}
	a, err := ReadApprovers(ctx, c.r, c.rep.Base, env)
	if err != nil {
		return nil, err
	}
	pa, _, err := gitops.Read(ctx, c.r, c.rep.Head, file, promotion.ParsePolicyApproval)
	if err != nil {
		return []Finding{{Rule: RuleApprovalCommit, Environment: env, File: file, Reason: err.Error()}}, nil
	}
	var out []Finding
	good := 0
	if pa != nil && pa.Change == d.Change {
		h, err := a.scan(ctx, c.r, c.rep.MergeBase, c.rep.Head, policyApprovalFile(env))
		if err != nil {
			return nil, err
		}
		for i, ap := range pa.Approvals {
			field := fmt.Sprintf("approvals[%d]", i)
			why := a.judge(h, ap, c.r.Prefix+file)
			if why == nil && !ap.ExpiresAt.After(c.req.Now) {
				why = &Finding{Rule: RuleApprovalExpired, Reason: fmt.Sprintf("expired at %s", ap.ExpiresAt.UTC().Format("2006-01-02T15:04:05Z"))}
			}
			if why != nil {
				why.Environment, why.File, why.Field = env, file, field
				why.Reason = fmt.Sprintf("%s %s by %s: %s", file, field, ap.Approver, why.Reason)
				out = append(out, *why)
				continue
			}
			good++
		}
	}
	d.Approved = good
	if good >= d.Required {
		return nil, nil
	}
	approved := "no approval of this change"
	if pa != nil && pa.Change == d.Change {
		approved = fmt.Sprintf("%d valid approval(s) of this change", good)
	}
	out = append(out, Finding{Rule: RuleApprovalCount, Environment: env, File: file, Field: "approvals",
		Reason: fmt.Sprintf("%s: %s; %s needs %d, signed by its approvers (%s): %s", file, approved, env, d.Required,
			strings.Join(a.env.Approvers, ", "), how)})
	return out, nil
}
