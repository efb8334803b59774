package evidence

import (
	"bytes"
	"testing"
)

// FuzzParse: evidence files are read from the GitOps repository, which
// anyone with push access writes. Parse must never panic, and whatever it
// accepts must be valid and encode to bytes that parse back to the same
// encoding.
func FuzzParse(f *testing.F) {
	good, err := record().Marshal()
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][]byte{good, []byte(`{}`), []byte(`{"schemaVersion":"evidence/v1"}`), []byte(`[]`), good[:len(good)/2]} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse("fuzz.json", data)
		if err != nil {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("Parse accepted an invalid record: %v", err)
		}
		once, err := r.Marshal()
		if err != nil {
			t.Fatalf("an accepted record does not encode: %v", err)
		}
		again, err := Parse("fuzz.json", once)
		if err != nil {
			t.Fatalf("its encoding does not parse: %v\n%s", err, once)
		}
		twice, err := again.Marshal()
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("encoding is not stable (%v):\n%s\n%s", err, once, twice)
		}
	})
}
