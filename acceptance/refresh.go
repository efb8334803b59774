package acceptance

import (
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

// Refresh is the committed Acceptance file (file, its content prev) as a
// change of the overlay writes it in the same commit (promote propose,
// rollback, breakglass writeback): d's declared Acceptance, stamped with
// renderer, keeping the namespace and source repository URL of prev (the
// flags `render --write-acceptance` was run with).
func Refresh(d *Declaration, file string, prev []byte, renderer string) ([]byte, error) {
	a := d.Acceptance
	a.Spec.Renderer = renderer
	objs, err := render.DecodeManifests(prev, file)
	if err != nil {
		return nil, exitcode.InvalidFile(file, err)
	}
	for _, o := range objs {
		if !IsAcceptance(o) {
			continue
		}
		old, err := FromObject(o)
		if err != nil {
			return nil, exitcode.InvalidFile(file, err)
		}
		a.Namespace, a.Spec.SourceRepoURL = old.Namespace, old.Spec.SourceRepoURL
	}
	return FileContent(a, d.App.RelDir())
}
