package secretdigest

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestGuessCannotBeTested: the digest of a low-entropy value shows no
// unkeyed hash of it (what the old short hash let a reader confirm a guess
// against), equal values show equal digests in one run, different values
// differ, and another key (another run) shows another digest.
func TestGuessCannotBeTested(t *testing.T) {
	t.Parallel()
	guess := []byte("hunter2")
	sum := sha256.Sum256(guess)
	unkeyed := hex.EncodeToString(sum[:])
	d := Of(guess)
	if !strings.HasPrefix(d, Prefix) || len(d) != len(Prefix)+hexDigits {
		t.Fatalf("digest %q", d)
	}
	if strings.Contains(unkeyed, strings.TrimPrefix(d, Prefix)) {
		t.Fatalf("digest %q is a piece of the unkeyed sha256 %s", d, unkeyed)
	}
	if Of(guess) != d {
		t.Fatal("equal values show different digests in one run")
	}
	if Of([]byte("hunter3")) == d {
		t.Fatal("different values show one digest")
	}
	if With([]byte("another run's key"), guess) == d {
		t.Fatal("another key shows the same digest")
	}
}
