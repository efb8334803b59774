package render_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

// FuzzHelmParameters: ARGOCD_APP_PARAMETERS comes from whoever can edit the
// Application. Whatever it holds, ParseHelmParameters returns the options or
// an *exitcode.InvalidInput naming ARGOCD_APP_PARAMETERS, never panics, and
// every --set parameter it returns has a name.
func FuzzHelmParameters(f *testing.F) {
	for _, s := range []string{
		``, `[]`, `null`, `{}`, `[{"name":"valueFiles","array":["a.yaml","../b.yaml"]}]`,
		`[{"name":"values","string":"a: 1\nb: [x]\n"},{"name":"releaseName","string":"r"}]`,
		`[{"name":"parameters","map":{"image.tag":"v1","a\\.b":"c"}}]`,
		`[{"name":"parameters","string":"[{name: a, value: '1', forceString: true}]"}]`,
		`[{"name":"parameters","array":["a=b","c"]}]`, `[{"name":"skipCrds","string":"true"},{"name":"skipTests","string":"no"}]`,
		`[{"name":"valueFiles","string":"x"},{"name":"valueFiles","string":"y"}]`, `[{"name":"parameters","string":"*a"}]`,
		`[{"name":"parameters","string":"- &a {name: x}\n- *a\n"}] trailing`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		opts, err := render.ParseHelmParameters(data)
		if err != nil {
			var inv *exitcode.InvalidInput
			if !errors.As(err, &inv) || inv.File != render.EnvAppParameters {
				t.Fatalf("error %v is not invalid input naming %s", err, render.EnvAppParameters)
			}
			return
		}
		for _, p := range opts.Parameters {
			if strings.TrimSpace(p.Name) == "" {
				t.Fatalf("parameter without a name: %+v", opts.Parameters)
			}
		}
	})
}
