package promotion

import (
	"flag"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/throughline-dev/throughline/internal/golden"
)

// errorLines collects the "<case>: <error>" lines of a table's error cases
// (safe from parallel subtests) and, once the test and its subtests are
// done, compares them sorted with the golden file: the cases assert on
// error types and fields, the wording is tested here once. cases is the
// number of lines the table records; fewer (a -run of some cases) skips
// the comparison, fewer without -run fails.
func errorLines(t *testing.T, file string, cases int) func(name string, err error) {
	t.Helper()
	var mu sync.Mutex
	var lines []string
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if len(lines) != cases {
			if run := flag.Lookup("test.run"); !t.Failed() && (run == nil || run.Value.String() == "") {
				t.Errorf("%d error lines for %s, want %d", len(lines), file, cases)
			}
			return
		}
		slices.Sort(lines)
		golden.Compare(t, file, []byte(strings.Join(lines, "\n")+"\n"))
	})
	return func(name string, err error) {
		mu.Lock()
		defer mu.Unlock()
		msg := "<nil>"
		if err != nil {
			msg = err.Error()
		}
		lines = append(lines, name+": "+msg)
	}
}
