package render

import (
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// canonicalEncoders reuses encoders (and their buffers) across objects.
var canonicalEncoders = sync.Pool{New: func() any { return new(canonicalEncoder) }}

// canonicalEncoder appends the canonical form to buf: JSON's structure
// characters directly, strings through jsontext.AppendQuote and numbers in
// jsontext's ECMAScript form (jsontext.Value.Canonicalize writes both the
// same way), without an encoder's per-token state machine.
type canonicalEncoder struct {
	buf  []byte
	keys []string
}

// canonicalDirect writes the RFC 8785 form of a decoded object in one pass:
// the object's maps walked with their names in UTF-16 order. It reports
// false for anything it does not handle (a Go type other than those a JSON
// or YAML decoder produces, invalid UTF-8, NaN or infinity), and Canonical
// then takes the marshal-and-canonicalize path, which decides.
func canonicalDirect(m map[string]any) ([]byte, bool) {
	ce := canonicalEncoders.Get().(*canonicalEncoder)
	defer canonicalEncoders.Put(ce)
	ce.buf = ce.buf[:0]
	if !ce.value(m) {
		return nil, false
	}
	return slices.Clone(ce.buf), true
}

func (ce *canonicalEncoder) value(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		return ce.object(v)
	case []any:
		if v == nil {
			ce.buf = append(ce.buf, "null"...) // as encoding/json writes a nil slice
			return true
		}
		ce.buf = append(ce.buf, '[')
		for i, e := range v {
			if i > 0 {
				ce.buf = append(ce.buf, ',')
			}
			if !ce.value(e) {
				return false
			}
		}
		ce.buf = append(ce.buf, ']')
		return true
	case string:
		return ce.str(v)
	case bool:
		ce.buf = strconv.AppendBool(ce.buf, v)
		return true
	case nil:
		ce.buf = append(ce.buf, "null"...)
		return true
	// RFC 8785 numbers are IEEE 754 doubles in ECMAScript form: an integer
	// is written as the double it becomes (2^53+1 is 9007199254740992).
	case float64:
		return ce.number(v)
	case int64:
		return ce.number(float64(v))
	case int:
		return ce.number(float64(v))
	}
	return false
}

func (ce *canonicalEncoder) str(s string) bool {
	var err error
	ce.buf, err = jsontext.AppendQuote(ce.buf, s) // an error is invalid UTF-8
	return err == nil
}

func (ce *canonicalEncoder) number(f float64) bool {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return false // JSON has no such number
	case f == 0:
		ce.buf = append(ce.buf, '0') // RFC 8785 writes -0 as 0
	case f == math.Trunc(f) && math.Abs(f) < 1<<53:
		// An integral double below 2^53 is its integer in ECMAScript
		// form (it switches to exponents at 1e21): most numbers of a
		// manifest (replicas, ports) take this path, without allocating.
		ce.buf = strconv.AppendInt(ce.buf, int64(f), 10)
	default:
		ce.buf = append(ce.buf, jsontext.Float(f).String()...)
	}
	return true
}

func (ce *canonicalEncoder) object(m map[string]any) bool {
	if m == nil {
		ce.buf = append(ce.buf, "null"...)
		return true
	}
	start := len(ce.keys)
	for k := range m {
		ce.keys = append(ce.keys, k)
	}
	keys := ce.keys[start:]
	slices.SortFunc(keys, compareUTF16)
	ce.buf = append(ce.buf, '{')
	ok := true
	for i, k := range keys {
		if i > 0 {
			ce.buf = append(ce.buf, ',')
		}
		if ok = ce.str(k); !ok {
			break
		}
		ce.buf = append(ce.buf, ':')
		if ok = ce.value(m[k]); !ok {
			break
		}
	}
	ce.keys = ce.keys[:start]
	ce.buf = append(ce.buf, '}')
	return ok
}

// compareUTF16 orders names by their UTF-16 code units (RFC 8785 3.2.3),
// which is byte order unless a name holds a character above U+FFFF.
func compareUTF16(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			if a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf {
				return int(a[i]) - int(b[i])
			}
			for i > 0 && !utf8.RuneStart(a[i]) {
				i-- // back to the first byte of the character (a and b agree up to i)
			}
			return slices.Compare(utf16.Encode([]rune(a[i:])), utf16.Encode([]rune(b[i:])))
		}
	}
	return len(a) - len(b)
}
