// Package hostile builds the inputs a careless or hostile contributor
// commits, for the tests of every reader of untrusted input (the render,
// the gate, the promotion records). For tests only; it imports nothing but
// the standard library.
package hostile

import (
	"fmt"
	"strings"
)

// AliasBomb is a YAML mapping of levels keys, each an anchored list of
// width aliases to the previous one: width^levels scalars once the aliases
// are expanded ("billion laughs"). AliasBomb(9, 7) is 322 bytes and
// expands to about 4.8 million nodes (~100 MB of YAML); AliasBomb(9, 10)
// to 3.5 billion.
func AliasBomb(width, levels int) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [" + strings.TrimSuffix(strings.Repeat("lol,", width), ",") + "]\n")
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), width), ","))
	}
	return b.String()
}
