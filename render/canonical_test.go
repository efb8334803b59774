package render

import (
	"slices"
	"testing"
)

// TestCompareUTF16 holds the RFC 8785 name order where it differs from byte
// order: a character above U+FFFF (a surrogate pair, 0xD8xx) sorts before
// U+E000..U+FFFF, though its UTF-8 bytes sort after them.
func TestCompareUTF16(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		want int // sign
	}{
		{"a", "b", -1},
		{"ab", "a", 1},
		{"", "", 0},
		{"\U0001F600", "\uE000", -1},
		{"x\U0001F600", "x\uFFFD", -1},
		{"\u20B0", "\u2010", 1}, // same first byte, differ inside the character
		{"\u00e9", "z", 1},
	} {
		got := compareUTF16(c.a, c.b)
		if sign(got) != c.want {
			t.Errorf("compareUTF16(%q, %q) = %d, want sign %d", c.a, c.b, got, c.want)
		}
	}
	keys := []string{"\uE000", "\U0001F600", "a"}
	slices.SortFunc(keys, compareUTF16)
	if want := []string{"a", "\U0001F600", "\uE000"}; !slices.Equal(keys, want) {
		t.Errorf("sorted %q, want %q", keys, want)
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
