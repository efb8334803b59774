package breakglass

import (
	"bytes"
	"testing"
)

// The pause record and the break-glass evidence are read from the GitOps
// repository, which anyone with push access writes. The parsers must never
// panic; whatever they accept is valid and encodes to bytes that parse back
// to the same encoding.

func FuzzParse(f *testing.F) {
	good, err := resumedRecord(f).Marshal()
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][]byte{good, []byte("schemaVersion: x\n"), []byte("a: &a [*a]\n"), good[:len(good)/2], {}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse("breakglass/production/web.yaml", data)
		if err != nil {
			return
		}
		stableEncoding(t, r.Marshal, func(b []byte) (func() ([]byte, error), error) {
			again, err := Parse("again.yaml", b)
			if err != nil {
				return nil, err
			}
			return again.Marshal, nil
		})
	})
}

func FuzzParseEvidence(f *testing.F) {
	rec := resumedRecord(f)
	good, err := NewEvidence(rec, Restoration{At: rec.Resume.At, Field: "spec.syncPolicy.automated", ResourceVersion: "99"}).Marshal()
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][]byte{good, []byte(`{}`), []byte(`{"schemaVersion":"breakglass-evidence/v1"} {}`), good[:len(good)/2]} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseEvidence("e.json", data)
		if err != nil {
			return
		}
		stableEncoding(t, e.Marshal, func(b []byte) (func() ([]byte, error), error) {
			again, err := ParseEvidence("again.json", b)
			if err != nil {
				return nil, err
			}
			return again.Marshal, nil
		})
	})
}

// stableEncoding checks that an accepted document encodes, that the
// encoding parses, and that it encodes to the same bytes again.
func stableEncoding(t *testing.T, marshal func() ([]byte, error), reparse func([]byte) (func() ([]byte, error), error)) {
	t.Helper()
	once, err := marshal()
	if err != nil {
		t.Fatalf("an accepted document does not encode: %v", err)
	}
	marshalAgain, err := reparse(once)
	if err != nil {
		t.Fatalf("its encoding does not parse: %v\n%s", err, once)
	}
	twice, err := marshalAgain()
	if err != nil || !bytes.Equal(once, twice) {
		t.Fatalf("encoding is not stable (%v):\n%s\n%s", err, once, twice)
	}
}
