package overlay_test

import (
	"fmt"

	"github.com/throughline-dev/throughline/overlay"
)

func ExampleSetImageDigest() {
	in := []byte(`images:
  # The artifact identity.
  - name: ghcr.io/shop/checkout
    newTag: "1.4.2@sha256:1111111111111111111111111111111111111111111111111111111111111111"  # informative
`)
	out, changed, err := overlay.SetImageDigest(in, "kustomization.yaml", "ghcr.io/shop/checkout", "1.5.0",
		"sha256:2222222222222222222222222222222222222222222222222222222222222222")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(changed)
	fmt.Print(string(out))
	// Output:
	// true
	// images:
	//   # The artifact identity.
	//   - name: ghcr.io/shop/checkout
	//     newTag: "1.5.0@sha256:2222222222222222222222222222222222222222222222222222222222222222"  # informative
}

func ExampleKustomization_AppendImages() {
	k, err := overlay.ParseKustomization("kustomization.yaml", []byte(`resources:
  - ../../base # the base
images:
  - name: ghcr.io/shop/checkout
    newTag: v1
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	if e := k.Image("ghcr.io/shop/checkout"); e != nil {
		if _, _, err := e.Set("newName", "mirror.example/checkout"); err != nil {
			fmt.Println(err)
			return
		}
	}
	if err := k.AppendImages([]overlay.NewImage{{Name: "ghcr.io/shop/agent", NewTag: "2.0"}}); err != nil {
		fmt.Println(err)
		return
	}
	out, err := k.Bytes()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(out))
	// Output:
	// resources:
	//   - ../../base # the base
	// images:
	//   - name: ghcr.io/shop/checkout
	//     newName: mirror.example/checkout
	//     newTag: v1
	//   - name: ghcr.io/shop/agent
	//     newTag: "2.0"
}
