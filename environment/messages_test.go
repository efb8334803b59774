package environment

import (
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"

	"github.com/throughline-dev/throughline/internal/golden"
)

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

// wantInvalid fails t unless err is invalid input (exit 4) naming file; a
// field it names is in its message (the golden files).
func wantInvalid(t *testing.T, err error) {
	t.Helper()
	var in *exitcode.InvalidInput
	if !errors.As(err, &in) || exitcode.Code(err) != exitcode.Invalid || in.File != file {
		t.Fatalf("exit %d: %v, want invalid input naming %s", exitcode.Code(err), err, file)
	}
}

// wantRefusal fails t unless err is a refusal (exit 3) naming file and
// returns it.
func wantRefusal(t *testing.T, err error) *exitcode.Refusal {
	t.Helper()
	var re *exitcode.Refusal
	if !errors.As(err, &re) || exitcode.Code(err) != exitcode.Refused || re.File != file {
		t.Fatalf("exit %d: %v, want a refusal naming %s", exitcode.Code(err), err, file)
	}
	return re
}
