package health

import (
	"strings"
	"testing"
)

func dg(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

func TestWorse(t *testing.T) {
	t.Parallel()
	if Worse(Verified, Pending) != Pending || Worse(Mismatch, Unverifiable) != Mismatch || Worse(Unverifiable, Pending) != Unverifiable {
		t.Fatal("Worse order")
	}
}
