package acceptance

import (
	"fmt"
	"path/filepath"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/atomicfile"
	"github.com/throughline-dev/throughline/render"
)

// File is the file WriteFile writes into an overlay (the Flux path).
const File = "throughline-acceptance.yaml"

// fileHeader heads the committed Acceptance.
const fileHeader = "# Written by `throughline render --write-acceptance`; do not edit.\n" +
	"# The PR job runs `throughline render --check-acceptance` and fails when it is stale.\n"

// WriteFile writes the declared Acceptance into the application directory
// as File (without a source revision: a commit cannot name itself) and, for
// a kustomization, lists File in its resources, keeping the kustomization's
// comments and formatting. Writing it again changes nothing.
func (d *Declaration) WriteFile() error {
	data, err := FileContent(d.Acceptance, d.App.RelDir())
	if err != nil {
		return err
	}
	// The kustomization's edit is read and made first: a refusal leaves
	// nothing written, not an Acceptance no kustomization lists.
	var kfile string
	var kedit []byte
	if d.App.Mode == render.ModeKustomize {
		if kfile, kedit, err = addKustomizationResource(d.App, File); err != nil {
			return err
		}
	}
	if err := atomicfile.Write(filepath.Join(d.App.Dir, File), data, 0o644); err != nil {
		return err
	}
	if kedit == nil {
		return nil
	}
	return atomicfile.Write(kfile, kedit, 0o644)
}

// FileContent is the content of File for the Acceptance a of the
// application directory dir (named in errors): its header and a, without
// a source revision (a commit cannot name itself). WriteFile writes it;
// promote writes it in a promotion's commit and its PR gate compares it.
func FileContent(a v1alpha1.Acceptance, dir string) ([]byte, error) {
	a.Spec.SourceRevision = "" //nolint:staticcheck // SA1019: an Acceptance read back may still carry it
	obj, err := ToObject(&a)
	if err != nil {
		return nil, err
	}
	n, err := kyaml.FromMap(obj.Map)
	if err != nil {
		return nil, fmt.Errorf("encoding the Acceptance of %s: %w", dir, err)
	}
	s, err := n.String()
	if err != nil {
		return nil, fmt.Errorf("encoding the Acceptance of %s: %w", dir, err)
	}
	return []byte(fileHeader + s), nil
}

// addKustomizationResource is the app's own kustomization (its path) with
// resource appended to its resources; nil when it lists it already.
func addKustomizationResource(app *render.App, resource string) (string, []byte, error) {
	file := app.Kustomizations[0].File
	kfile := filepath.Join(app.FS.Root(), filepath.FromSlash(file))
	// The confined reader: the file the render read, never one a symlink
	// swapped in out of the repository since.
	data, err := app.FS.ReadForEdit(kfile)
	if err != nil {
		return "", nil, err // it names the file
	}
	out, err := addResource(data, file, resource)
	if err != nil || string(out) == string(data) {
		return "", nil, err
	}
	return kfile, out, nil
}
