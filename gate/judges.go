package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
	if head, err = r.Resolve(ctx, head); err != nil { // read at a commit, as the every-PR check reads
		return nil, exitcode.Usagef("%s: %v", head, err)
	}
	reg, err := promotion.ReadRegistry(ctx, r, base)
	if err != nil {
		return nil, err
	}
	return judgesChange(ctx, newJudgesReader(r, nil), reg, mb, head, env)
}

// judgesReader reads what judges the environments, each revision once
// (judgesAt): the policy, the allowed signers, the allow-list, the tree's
// listing and overlays, and each judged file's digest, shared by every
// environment's view (revJudges.env).
type judgesReader struct {
	r    *gitops.Repo
	revs map[string]*revJudges
	// blobs are files already read from Git, by revision and file: the
	// claimed controller files the controllers step read (nil: none).
	blobs map[string]map[string][]byte
}

func newJudgesReader(r *gitops.Repo, blobs map[string]map[string][]byte) *judgesReader {
	return &judgesReader{r: r, revs: map[string]*revJudges{}, blobs: blobs}
}

// revJudges is what judges the environments at one revision, read once
// for all of them. An error that reading one part met is kept and
// returned where an environment's view needs that part.
type revJudges struct {
	rd  *judgesReader
	rev string
	// pol is the policy at rev (nil: there is none, nothing judges).
	pol *promotion.Policy
	// common are the facts of every environment: the policy's top-level
	// fields.
	common judgeFacts
	// signers are the allowed-signers facts (signersErr: reading them
	// failed).
	signers    judgeFacts
	signersErr error
	// allow is the allow-list (nil: none; allowErr: unreadable).
	allow    *policy.AllowList
	allowErr error
	// listed: reg, files and overlays are read (listErr: failed).
	listed   bool
	listErr  error
	reg      *environment.Registry
	files    []string
	overlays map[string]map[string]string
	// digests are the judged files' digests (fileDigest) read so far.
	digests map[string]string
}

// judgesAt reads what judges the environments at rev, once per revision.
func (rd *judgesReader) judgesAt(ctx context.Context, rev string) (*revJudges, error) {
	if j, ok := rd.revs[rev]; ok {
		return j, nil
	}
	pol, err := promotion.ReadPolicy(ctx, rd.r, rev)
	if err != nil {
		return nil, err
	}
	j := &revJudges{rd: rd, rev: rev, pol: pol, common: judgeFacts{}, signers: judgeFacts{}, digests: map[string]string{}}
	if pol != nil {
		top := *pol
		top.Environments = nil
		if err := flatten(j.common, promotion.PolicyFile, "", top); err != nil {
			return nil, err
		}
		// The approvers' keys and the notifiers' keys (evidenceSigners:
		// principals are environments) judge every environment alike.
		for _, file := range []string{pol.AllowedSigners, pol.EvidenceSigners} {
			if file != "" && j.signersErr == nil {
				j.signersErr = j.signerFacts(ctx, file)
			}
		}
		j.allow, j.allowErr = readAllowList(ctx, rd.r, rev)
	}
	rd.revs[rev] = j
	return j, nil
}

// list reads the registry, the tree's files and its overlays at j's
// revision, once.
func (j *revJudges) list(ctx context.Context) error {
	if j.listed {
		return j.listErr
	}
	j.listed = true
	if j.reg, j.listErr = promotion.Registry(j.pol); j.listErr != nil {
		return j.listErr
	}
	if j.files, j.listErr = j.rd.r.ListTree(ctx, j.rev, "."); j.listErr != nil {
		return j.listErr
	}
	j.overlays = overlaysAt(j.reg, j.files)
	return nil
}

// judgesChange is JudgesChange with the base's registry and the merge base.
func judgesChange(ctx context.Context, rd *judgesReader, reg *environment.Registry, mb, head, env string) (*JudgesDiff, error) {
	before, err := rd.env(ctx, mb, env, nil)
	if err != nil {
		return nil, err
	}
	after, err := rd.env(ctx, head, env, before.apps)
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

// envJudges is what judges an environment at one revision, and its apps.
type envJudges struct {
	facts judgeFacts
	// apps are the environment's apps (those whose source checks judge it).
	apps []string
}

// env is what judges env at rev (revJudges.env).
func (rd *judgesReader) env(ctx context.Context, rev, env string, apps []string) (*envJudges, error) {
	j, err := rd.judgesAt(ctx, rev)
	if err != nil {
		return nil, err
	}
	return j.env(ctx, env, apps)
}

// env is what judges env at j's revision: the policy's top-level fields
// and env's registry entry, field by field (every field, present and
// future: the entry is compared as its JSON), the allowed-signers file by
// principal, the trust files the entry names, the allow-list entries in
// env's scope, and the runtime checks file of each of apps' overlays in
// every environment env promotes from (apps nil: env's own apps at the
// revision), and what deploys it: the content of every file its
// controllers patterns claim (its Applications, Kustomizations,
// AppProject, the service account and role bindings Flux applies as).
func (j *revJudges) env(ctx context.Context, env string, apps []string) (*envJudges, error) {
	out := &envJudges{facts: judgeFacts{}, apps: apps}
	if j.pol == nil {
		return out, nil
	}
	maps.Copy(out.facts, j.common)
	e, registered := j.pol.Environments[env]
	if registered {
		if err := flatten(out.facts, promotion.PolicyFile, "environments."+env, e); err != nil {
			return nil, err
		}
	}
	if j.signersErr != nil {
		return nil, j.signersErr
	}
	maps.Copy(out.facts, j.signers)
	if registered && e.Trust != nil {
		for _, f := range e.Trust.Files() {
			if err := j.fileFact(ctx, f, out.facts); err != nil {
				return nil, err
			}
		}
	}
	if j.allowErr != nil {
		return nil, j.allowErr
	}
	allowListFacts(j.allow, env, out.facts)
	if !registered {
		return out, nil
	}
	if err := j.list(ctx); err != nil {
		return nil, err
	}
	if e, ok := j.reg.Get(env); ok {
		for _, f := range j.files {
			if e.OwnsController(f) {
				if err := j.fileFact(ctx, f, out.facts); err != nil {
					return nil, err
				}
			}
		}
	}
	if out.apps == nil {
		out.apps = sortedApps(j.overlays[env])
	}
	for _, src := range sources(j.reg, env) {
		for _, app := range out.apps {
			k := fact{field: fmt.Sprintf("runtime checks of %s in %s", app, src)}
			dir, ok := j.overlays[src][app]
			if !ok {
				continue // no evidence of app comes from src
			}
			file := path.Join(dir, render.ChecksFile)
			v, err := j.digest(ctx, file)
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

// fileFact adds the content of file as one fact (digest).
func (j *revJudges) fileFact(ctx context.Context, file string, facts judgeFacts) error {
	v, err := j.digest(ctx, file)
	if err != nil {
		return err
	}
	facts[fact{file: file}] = v
	return nil
}

// digest is the content of file at j's revision in words (fileDigest),
// read once per revision: from the blobs the controllers step read, else
// from Git.
func (j *revJudges) digest(ctx context.Context, file string) (string, error) {
	if v, ok := j.digests[file]; ok {
		return v, nil
	}
	data, found := j.rd.blobs[j.rev][file]
	if !found {
		var err error
		if data, found, err = readGit(ctx, j.rd.r, j.rev, file); err != nil {
			return "", err
		}
	}
	v := fileDigest(data, found)
	j.digests[file] = v
	return v, nil
}

// fileDigest is a file's content in words: its sha256 and size, "absent"
// when there is no such file.
func fileDigest(data []byte, found bool) string {
	if !found {
		return "absent"
	}
	sum := sha256.Sum256(data)
	return fmt.Sprintf("sha256:%s (%d bytes)", hex.EncodeToString(sum[:])[:16], len(data))
}

// readGit reads file at rev from Git (the blob, what a controller or a
// gate reads; never an export, whose content .gitattributes can change):
// found is false when there is none. A symbolic link is invalid input
// naming it, read in process or through git alike (gitrepo.ErrSymlink):
// its content would be another file's.
func readGit(ctx context.Context, r *gitops.Repo, rev, file string) (data []byte, found bool, err error) {
	data, err = r.ReadFile(ctx, rev, file)
	switch {
	case errors.Is(err, gitrepo.ErrNotFound):
		return nil, false, nil
	case errors.Is(err, gitrepo.ErrSymlink):
		return nil, false, exitcode.InvalidFile(file, fmt.Errorf("at %s: %w", gitrepo.Short(rev), gitrepo.ErrSymlink))
	case err != nil:
		return nil, false, err
	}
	return data, true, nil
}

// signerFacts adds the allowed-signers file as one fact per principal (its
// keys and options), or as its content where it does not parse.
func (j *revJudges) signerFacts(ctx context.Context, file string) error {
	data, found, err := readGit(ctx, j.rd.r, j.rev, file)
	if err != nil {
		return err
	}
	if !found {
		j.signers[fact{file: file}] = "absent"
		return nil
	}
	signers, err := gitrepo.ParseAllowedSigners(data)
	if err != nil {
		j.signers[fact{file: file}] = fileDigest(data, true)
		return nil
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
		j.signers[fact{file: file, field: "key of " + p}] = strings.Join(ks, ", ")
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

// readAllowList reads the allow-list at rev (nil when there is none).
func readAllowList(ctx context.Context, r *gitops.Repo, rev string) (*policy.AllowList, error) {
	data, found, err := readGit(ctx, r, rev, policy.AllowListFile)
	if err != nil || !found {
		return nil, err
	}
	al, err := policy.ParseAllowList(data, policy.AllowListFile)
	if err != nil {
		return nil, exitcode.InvalidFile(policy.AllowListFile, err)
	}
	return al, nil
}

// allowListFacts adds the entries of al (nil: none) in env's scope, one
// fact each.
func allowListFacts(al *policy.AllowList, env string, facts judgeFacts) {
	if al == nil {
		return
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
	rd := newJudgesReader(c.r, c.blobs)
	for _, name := range c.reg.Names() {
		d, err := judgesChange(ctx, rd, c.reg, c.rep.MergeBase, c.rep.Head, name)
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
