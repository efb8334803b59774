package ledger

import "testing"

// TestShortDigest: the one short form of a digest (the status table, the
// commit messages, the web view): its algorithm and 12 hex digits.
func TestShortDigest(t *testing.T) {
	for in, want := range map[string]string{
		"sha256:4b7e2a91c3d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f": "sha256:4b7e2a91c3d5",
		"sha512:00112233445566778899":  "sha512:001122334455",
		"sha256:4b7e2a91c3d5":          "sha256:4b7e2a91c3d5",
		"":                             "",
		"not-a-digest-but-long-enough": "not-a-digest-but-long-enough",
	} {
		if got := ShortDigest(in); got != want {
			t.Errorf("ShortDigest(%q) = %q, want %q", in, got, want)
		}
	}
}
