package cmp_test

import (
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/policy"
)

// finding is where a typed error of a render says it is: its rule (empty
// for invalid input), file and field (empty for invalid input, whose field
// is in its message: the golden files hold that).
type finding struct{ rule, file, field string }

// findingOf reads the finding of err: a policy refusal of one violation,
// an exitcode.Refusal or an exitcode.InvalidInput.
func findingOf(t *testing.T, err error) finding {
	t.Helper()
	var pr *policy.Refusal
	if errors.As(err, &pr) {
		if len(pr.Violations) != 1 {
			t.Fatalf("%d violations, want 1: %v", len(pr.Violations), err)
		}
		v := pr.Violations[0]
		return finding{string(v.Rule), v.File, v.Field}
	}
	var r *exitcode.Refusal
	if errors.As(err, &r) {
		return finding{r.Rule, r.File, r.Field}
	}
	var in *exitcode.InvalidInput
	if errors.As(err, &in) {
		return finding{"", in.File, ""}
	}
	t.Fatalf("not a typed finding: %v", err)
	return finding{}
}

// messages collects the wording of a table's errors, one entry per case,
// for one golden file: the wording is tested there once.
type messages struct {
	mu    sync.Mutex
	lines []string
	cases int // how many cases the table has
}

// add records err's message under the case name; a message of several
// lines keeps them, indented.
func (m *messages) add(name string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lines = append(m.lines, name+": "+strings.ReplaceAll(err.Error(), "\n", "\n\t")+"\n")
}

// compare compares the messages, sorted by case, with testdata/file, when
// every case of the table ran (not under a -run that picks some).
func (m *messages) compare(t *testing.T, file string) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.lines) != m.cases {
		t.Logf("testdata/%s not compared: %d of %d cases gave an error", file, len(m.lines), m.cases)
		return
	}
	sort.Strings(m.lines)
	golden.Compare(t, "testdata/"+file, []byte(strings.Join(m.lines, "")))
}
