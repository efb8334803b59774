package hostile

import (
	"strings"
	"testing"
)

func TestAliasBomb(t *testing.T) {
	t.Parallel()
	b := AliasBomb(9, 7)
	if len(b) != 322 || strings.Count(b, "\n") != 7 || !strings.HasPrefix(b, "l0: &l0 [lol,") || !strings.Contains(b, "l6: &l6 [*l5,") {
		t.Fatalf("AliasBomb(9, 7) = %d bytes:\n%s", len(b), b)
	}
}
