package trust

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// FuzzEmbedded: whatever manifest a registry returns, a bundle taken from
// a descriptor's data field is one whose content hashes to the digest it
// is kept under.
func FuzzEmbedded(f *testing.F) {
	good, err := artifact(EvidenceArtifactType, nil, nil, [][]byte{[]byte(`{"a":1}`), []byte("b")})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(bytes.Replace(good, []byte(`"data":"`), []byte(`"data":"AA`), 1))
	f.Add([]byte(`{"layers":[{"mediaType":"` + BundleMediaType + `","digest":"sha256:` +
		fmt.Sprintf("%x", sha256.Sum256([]byte("x"))) + `","size":1,"data":"eQ=="}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := v1.ParseManifest(bytes.NewReader(data))
		if err != nil {
			return
		}
		held := map[v1.Hash][]byte{}
		embedded(m, held)
		for h, b := range held {
			if h.Algorithm != "sha256" || fmt.Sprintf("%x", sha256.Sum256(b)) != h.Hex {
				t.Fatalf("kept %d bytes under %s", len(b), h)
			}
		}
	})
}
