package environment

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
)

// ErrUnanchoredRegexp is an identityRegexp that is not anchored at both
// ends of the text (^...$): unanchored, it also accepts any identity that
// merely contains a match, such as a workflow of another repository whose
// URI embeds the trusted one.
var ErrUnanchoredRegexp = errors.New("must be anchored at both ends (^...$, not (?m)), or it accepts any identity that contains a match")

// CheckIdentityRegexp checks a keyless signer's identity regexp: RE2 that
// compiles, and that can only match a whole identity (every alternative
// starts with ^ and ends with $, outside multi-line mode).
func CheckIdentityRegexp(re string) error {
	// The flags regexp.Compile uses: ^ and $ are the text's ends unless (?m).
	parsed, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return err
	}
	if !anchoredAt(parsed, true) || !anchoredAt(parsed, false) {
		return ErrUnanchoredRegexp
	}
	_, err = regexp.Compile(re)
	return err
}

// anchoredAt reports whether every match of re starts at the beginning of
// the text (start) or ends at its end (!start).
func anchoredAt(re *syntax.Regexp, start bool) bool {
	switch re.Op {
	case syntax.OpBeginText:
		return start
	case syntax.OpEndText:
		return !start
	case syntax.OpCapture:
		return anchoredAt(re.Sub[0], start)
	case syntax.OpConcat:
		if len(re.Sub) == 0 {
			return false
		}
		if start {
			return anchoredAt(re.Sub[0], start)
		}
		return anchoredAt(re.Sub[len(re.Sub)-1], start)
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			if !anchoredAt(sub, start) {
				return false
			}
		}
		return len(re.Sub) > 0
	default:
		return false
	}
}

// checkIdentityRegexp is CheckIdentityRegexp naming field.
func checkIdentityRegexp(field, re string) error {
	if err := CheckIdentityRegexp(re); err != nil {
		return fmt.Errorf("%s: %q: %w", field, re, err)
	}
	return nil
}
