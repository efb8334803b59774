package golden

import (
	"flag"
	"slices"
	"strings"
	"sync"
	"testing"
)

// ErrorLines collects the "<case>: <error>" lines of a table's error cases
// (safe from parallel subtests) and, once the test and its subtests are
// done, compares them sorted with the golden file: the cases assert on
// error types and fields, the wording is tested here once. cases is the
// number of lines the table records; fewer (a -run of some cases) skips
// the comparison, fewer without -run fails. With cases 0 (a table whose
// error cases are not counted) the lines are compared unless -run is
// given: the golden file itself then holds the count. replace are old, new pairs
// applied to each message (a commit id or a temporary directory that
// changes from run to run). A message of several lines keeps them,
// indented under its case.
func ErrorLines(t *testing.T, file string, cases int, replace ...string) func(name string, err error) {
	t.Helper()
	r := strings.NewReplacer(replace...)
	var mu sync.Mutex
	var lines []string
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		run := flag.Lookup("test.run")
		partial := run != nil && run.Value.String() != "" // a -run may pick some cases
		switch {
		case t.Failed():
			return
		case cases > 0 && len(lines) != cases && !partial:
			t.Errorf("%d error lines for %s, want %d", len(lines), file, cases)
			return
		case cases > 0 && len(lines) != cases, cases <= 0 && partial:
			return
		}
		slices.Sort(lines)
		Compare(t, file, []byte(strings.Join(lines, "\n")+"\n"))
	})
	return func(name string, err error) {
		mu.Lock()
		defer mu.Unlock()
		msg := "<nil>"
		if err != nil {
			msg = strings.ReplaceAll(r.Replace(err.Error()), "\n", "\n\t") // a line per case
		}
		lines = append(lines, name+": "+msg)
	}
}
