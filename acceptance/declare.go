package acceptance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile"
)

// Request says what to declare.
type Request struct {
	Render render.Options
	// AllowListFile is the allow-list path relative to the root;
	// empty means policy.AllowListFile.
	AllowListFile string
	// App names the application; empty means the directory above
	// overlays/ for an overlay (apps/checkout/overlays/staging: checkout),
	// else the directory name.
	App string
	// Environment is the environment the render is judged in (the
	// allow-list's environment-scoped exceptions hold in it only) and the
	// Acceptance declares. Empty means no environment (only unscoped
	// exceptions hold), unless DirectoryEnvironment is set.
	Environment string
	// DirectoryEnvironment lets an empty Environment be the directory
	// name when its parent is "overlays" (policy.Environment): the
	// convention of a repository without an environment registry. The
	// caller decides: with a registry the environment comes only from the
	// registry (its path, or a claim it accepts), never from a directory
	// name a contributor can choose.
	DirectoryEnvironment bool
	// Namespace of the Acceptance; empty means the namespace all workloads
	// share, if any.
	Namespace     string
	SourceRepoURL string
	// Renderer is throughline's version, stamped into the Acceptance.
	Renderer string
	// Registry is the environment registry the Acceptance's deadlines and
	// its checks' namespaces come from; nil means the one at the root
	// (policyfile.File), read through the render's filesystem.
	Registry *environment.Registry
	// ParseQuery checks the PromQL of the runtime checks; nil means
	// checkfile.LexQuery (the lean plugin path). The full binary passes
	// Prometheus's parser (package checkfile/promql).
	ParseQuery checkfile.QueryParser
}

// Declaration is a successful render that passed policy.
type Declaration struct {
	App *render.App
	// Objects are the rendered objects, without any Acceptance.
	Objects []render.Object
	// Committed are Acceptance objects the render itself contained (the
	// Flux path commits one into the overlay).
	Committed  []render.Object
	Hash       string
	Policy     policy.Result
	Acceptance v1alpha1.Acceptance
}

// Declare renders the application, applies every policy rule in the
// environment of req (Environment; by the directory name only when
// DirectoryEnvironment says so) and builds the Acceptance. Refusals are a *policy.Refusal, bad input a *exitcode.InvalidInput.
func Declare(ctx context.Context, req Request) (*Declaration, error) {
	app, err := render.Open(ctx, req.Render)
	if err != nil {
		return nil, err
	}
	if vs := policy.CheckTree(app); len(vs) > 0 {
		return nil, &policy.Refusal{Violations: vs}
	}
	objs, err := app.Build(ctx)
	if err != nil {
		return nil, err
	}
	d := &Declaration{App: app}
	for _, o := range objs {
		if IsAcceptance(o) {
			d.Committed = append(d.Committed, o)
		} else {
			d.Objects = append(d.Objects, o)
		}
	}
	allow, err := LoadAllowList(app.FS, req.AllowListFile)
	if err != nil {
		return nil, err
	}
	if req.DirectoryEnvironment {
		req.Environment = policy.Environment(req.Environment, app.SourcePath())
	}
	d.Policy = policy.CheckObjects(d.Objects, allow, req.Environment)
	d.Policy.Redact(app.Redactor())
	if err := d.Policy.Err(); err != nil {
		return nil, err
	}
	if d.Hash, err = render.Hash(d.Objects); err != nil {
		return nil, &exitcode.InvalidInput{File: app.RelDir(), Err: err}
	}
	d.Acceptance = d.build(req)
	if d.Acceptance.Spec.Charts, err = Charts(ctx, app); err != nil {
		return nil, err
	}
	if err := d.runtime(req); err != nil {
		return nil, err
	}
	return d, nil
}

// LoadAllowList reads the allow-list file (relative to the root of fsys;
// empty means policy.AllowListFile). A missing file is a nil allow-list.
// So is any file when fsys holds only part of the repository (a prefix:
// Argo CD's manifest-generate-paths streams): a file at the top of that
// part is an app team's, not the repository's allow-list, and no
// exception applies (every image must be pinned).
func LoadAllowList(fsys *render.ConfinedFS, file string) (*policy.AllowList, error) {
	var data []byte
	var err error
	if file == "" {
		file = policy.AllowListFile
		data, err = fsys.ReadRootFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	} else {
		p := filepath.Join(fsys.Root(), filepath.FromSlash(file))
		if fsys.Prefix() != "" || !fsys.Exists(p) {
			return nil, nil
		}
		data, err = fsys.ReadFile(p)
	}
	if err != nil {
		return nil, err
	}
	a, err := policy.ParseAllowList(data, file)
	if err != nil {
		return nil, &exitcode.InvalidInput{File: file, Err: err}
	}
	return a, nil
}

func (d *Declaration) build(req Request) v1alpha1.Acceptance {
	rel := d.App.SourcePath()
	overlay := path.Base(path.Dir(rel)) == "overlays"
	app := req.App
	switch {
	case app != "":
	case overlay:
		app = path.Base(path.Dir(path.Dir(rel)))
	case rel == ".":
		app = filepath.Base(d.App.FS.Root())
	default:
		app = path.Base(rel)
	}
	env := req.Environment // as judged (Declare applied DirectoryEnvironment)
	ns := req.Namespace
	if ns == "" {
		ns = commonNamespace(d.Policy.Containers)
	}
	a := v1alpha1.Acceptance{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.AcceptanceKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      ObjectName(app),
			Namespace: ns,
			Labels:    map[string]string{v1alpha1.LabelManagedBy: "throughline", v1alpha1.LabelApp: LabelValue(app)},
		},
		Spec: v1alpha1.AcceptanceSpec{
			App:           app,
			Environment:   env,
			SourceRepoURL: req.SourceRepoURL,
			SourcePath:    rel,
			RenderedHash:  d.Hash,
			ObjectCount:   len(d.Objects),
			Renderer:      req.Renderer,
			Exceptions:    d.Policy.Exceptions,
		},
	}
	if env != "" {
		a.Labels[v1alpha1.LabelEnvironment] = LabelValue(env)
	}
	a.Spec.Workloads = Workloads(d.Policy.Containers)
	return a
}

// Workloads groups the containers that passed policy by workload, in the
// order of the render: spec.workloads of the Acceptance.
func Workloads(cs []policy.DeclaredContainer) []v1alpha1.Workload {
	ws := []v1alpha1.Workload{}
	index := map[render.ID]int{}
	for _, c := range cs {
		i, ok := index[c.Object]
		if !ok {
			i = len(ws)
			index[c.Object] = i
			ws = append(ws, v1alpha1.Workload{
				APIVersion: c.Object.APIVersion(), Kind: c.Object.Kind, Namespace: c.Object.Namespace, Name: c.Object.Name,
			})
		}
		ws[i].Containers = append(ws[i].Containers, v1alpha1.Container{
			Name: c.Name, Path: c.Path, Image: c.Image, Digest: c.Pinned.Digest,
		})
	}
	return ws
}

// Stale reports why a committed Acceptance no longer matches the declared
// one ("" when it matches). The source revision is not compared: a commit
// cannot name itself.
func (d *Declaration) Stale() string {
	if len(d.Committed) == 0 {
		return "no Acceptance is committed in the overlay"
	}
	if len(d.Committed) > 1 {
		return fmt.Sprintf("%d Acceptance objects in one render", len(d.Committed))
	}
	got, err := FromObject(d.Committed[0])
	if err != nil {
		return err.Error()
	}
	if got.Spec.RenderedHash != d.Hash {
		return fmt.Sprintf("committed renderedHash %s, rendered %s", got.Spec.RenderedHash, d.Hash)
	}
	want := d.Acceptance.Spec
	have := got.Spec
	for _, sp := range []*v1alpha1.AcceptanceSpec{&want, &have} {
		sp.SourceRevision, sp.Renderer, sp.SourceRepoURL = "", "", "" //nolint:staticcheck // SA1019: an earlier render's revision is no difference
	}
	a, err1 := json.Marshal(want)
	b, err2 := json.Marshal(have)
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		return "committed Acceptance spec differs from the declared one (app, environment, workloads or images changed)"
	}
	return ""
}

// commonNamespace is the namespace every workload shares, or "".
func commonNamespace(cs []policy.DeclaredContainer) string {
	ns := ""
	for i, c := range cs {
		if i > 0 && c.Object.Namespace != ns {
			return ""
		}
		ns = c.Object.Namespace
	}
	return ns
}
