package checkfile_test

import (
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile"
)

// FuzzParse: no input panics, and every refusal is invalid input or the
// unpinned-image refusal, never an internal error.
func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte(check("  - name: a\n    prometheus: {query: 'up{a=\"(\"}', op: '<', threshold: 1e3}\n")))
	f.Add([]byte(check("  - name: a\n    http: {service: {name: s, port: 80}, path: /x, bodyMatch: '(a|b)*'}\n")))
	f.Add([]byte(head + "checks: [{name: a, job: {image: x}}]\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rc, err := checkfile.Parse("f.yaml", data, checkfile.Options{})
		if err != nil {
			if c := exitcode.Code(err); c != exitcode.Invalid && c != exitcode.Refused {
				t.Fatalf("exit %d: %v", c, err)
			}
			return
		}
		if len(rc.Checks) == 0 || len(rc.Checks) > checkfile.MaxChecks {
			t.Fatalf("%d checks accepted", len(rc.Checks))
		}
		for _, c := range rc.Checks {
			if n := btoi(c.Prometheus != nil) + btoi(c.HTTP != nil) + btoi(c.Job != nil); n != 1 {
				t.Fatalf("check %s has %d kinds", c.Name, n)
			}
		}
	})
}

// FuzzLexQuery: the light query check never panics.
func FuzzLexQuery(f *testing.F) {
	for _, q := range []string{`sum(rate(x[5m]))`, `up{a="\"("}`, "`x", `#(`} {
		f.Add(q)
	}
	f.Fuzz(func(_ *testing.T, q string) { _ = checkfile.LexQuery(q) })
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
