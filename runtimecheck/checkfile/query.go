package checkfile

import (
	"fmt"
	"strings"
)

// LexQuery is the light PromQL syntax check of the lean plugin binary,
// which must not link Prometheus (issue 17): the query's string literals
// are closed, its brackets ((), {}, []) balance and nest, and it holds no
// control characters. Its errors name the byte offset. It accepts some
// queries Prometheus refuses (an unknown function, a misplaced operator):
// the PR gate and `throughline render` parse with Prometheus's own parser
// (package checkfile/promql).
func LexQuery(q string) error {
	if strings.TrimSpace(q) == "" {
		return fmt.Errorf("empty query")
	}
	var stack []byte
	var at []int
	closing := map[byte]byte{')': '(', '}': '{', ']': '['}
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f:
			return fmt.Errorf("offset %d: control character %q", i, c)
		case c == '"' || c == '\'' || c == '`':
			end, err := skipString(q, i)
			if err != nil {
				return err
			}
			i = end
		case c == '#':
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '(' || c == '{' || c == '[':
			stack, at = append(stack, c), append(at, i)
		case c == ')' || c == '}' || c == ']':
			if len(stack) == 0 || stack[len(stack)-1] != closing[c] {
				return fmt.Errorf("offset %d: unexpected %q", i, c)
			}
			stack, at = stack[:len(stack)-1], at[:len(at)-1]
		}
	}
	if len(stack) > 0 {
		return fmt.Errorf("offset %d: unclosed %q", at[len(at)-1], stack[len(stack)-1])
	}
	return nil
}

// skipString returns the offset of the quote closing the string literal
// that starts at q[i].
func skipString(q string, i int) (int, error) {
	quote := q[i]
	for j := i + 1; j < len(q); j++ {
		switch {
		case q[j] == '\\' && quote != '`':
			j++
		case q[j] == quote:
			return j, nil
		case q[j] == '\n' && quote != '`':
			return 0, fmt.Errorf("offset %d: string literal not closed on its line", i)
		}
	}
	return 0, fmt.Errorf("offset %d: string literal not closed", i)
}
