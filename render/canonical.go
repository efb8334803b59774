package render

import (
	"bytes"
	"math"
	"slices"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// canonicalEncoders reuses encoders (and their buffers) across objects.
var canonicalEncoders = sync.Pool{New: func() any {
	b := new(bytes.Buffer)
	// Names come from a Go map: they cannot repeat, so the encoder need not
	// track them.
	return &canonicalEncoder{buf: b, enc: jsontext.NewEncoder(b, jsontext.AllowDuplicateNames(true))}
}}

type canonicalEncoder struct {
	buf  *bytes.Buffer
	enc  *jsontext.Encoder
	keys []string
}

// canonicalDirect writes the RFC 8785 form of a decoded object in one pass:
// the object's maps walked with their names in UTF-16 order, every token
// written by jsontext (its string escaping and ECMAScript number formatting
// are those of jsontext.Value.Canonicalize). It reports false for anything
// it does not handle (a Go type other than those a JSON or YAML decoder
// produces, invalid UTF-8, NaN or infinity), and Canonical then takes the
// marshal-and-canonicalize path, which decides.
func canonicalDirect(m map[string]any) ([]byte, bool) {
	ce := canonicalEncoders.Get().(*canonicalEncoder)
	defer canonicalEncoders.Put(ce)
	ce.buf.Reset()
	ce.enc.Reset(ce.buf, jsontext.AllowDuplicateNames(true))
	if !ce.value(m) {
		return nil, false
	}
	out := bytes.TrimSuffix(ce.buf.Bytes(), []byte{'\n'})
	return slices.Clone(out), true
}

func (ce *canonicalEncoder) value(v any) bool {
	var tok jsontext.Token
	switch v := v.(type) {
	case map[string]any:
		return ce.object(v)
	case []any:
		if v == nil {
			return ce.enc.WriteToken(jsontext.Null) == nil // as encoding/json writes a nil slice
		}
		if ce.enc.WriteToken(jsontext.BeginArray) != nil {
			return false
		}
		for _, e := range v {
			if !ce.value(e) {
				return false
			}
		}
		return ce.enc.WriteToken(jsontext.EndArray) == nil
	case string:
		tok = jsontext.String(v)
	case bool:
		tok = jsontext.Bool(v)
	case nil:
		tok = jsontext.Null
	// RFC 8785 numbers are IEEE 754 doubles in ECMAScript form: an integer
	// is written as the double it becomes (2^53+1 is 9007199254740992).
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false // jsontext writes them as strings; JSON has no such number
		}
		if v == 0 {
			v = 0 // RFC 8785 writes -0 as 0
		}
		tok = jsontext.Float(v)
	case int64:
		tok = jsontext.Float(float64(v))
	case int:
		tok = jsontext.Float(float64(v))
	default:
		return false
	}
	return ce.enc.WriteToken(tok) == nil
}

func (ce *canonicalEncoder) object(m map[string]any) bool {
	if m == nil {
		return ce.enc.WriteToken(jsontext.Null) == nil
	}
	start := len(ce.keys)
	for k := range m {
		ce.keys = append(ce.keys, k)
	}
	keys := ce.keys[start:]
	slices.SortFunc(keys, compareUTF16)
	ok := ce.enc.WriteToken(jsontext.BeginObject) == nil
	for _, k := range keys {
		if !ok {
			break
		}
		ok = ce.enc.WriteToken(jsontext.String(k)) == nil && ce.value(m[k])
	}
	ce.keys = ce.keys[:start]
	return ok && ce.enc.WriteToken(jsontext.EndObject) == nil
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
