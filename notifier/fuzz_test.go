package notifier

import (
	"errors"
	"testing"

	"github.com/throughline-dev/throughline/promotion"
)

// FuzzDecode: webhook bodies are untrusted until their signature or token
// is checked, and the decoders run right after that check. They must never
// panic; a decoded event always has a full commit id, an app and an
// environment, and any refusal says whether the body was malformed or only
// irrelevant.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"involvedObject":{"kind":"Kustomization","namespace":"flux-system","name":"checkout"},"severity":"info","reason":"ReconciliationSucceeded","metadata":{"revision":"main@sha1:` + "0123456789abcdef0123456789abcdef01234567" + `","environment":"production"}}`,
		`{"application":"checkout","namespace":"argocd","app":"checkout","environment":"production","revision":"0123456789abcdef0123456789abcdef01234567","health":"Healthy"}`,
		`{"involvedObject":{"kind":"K","name":"n"},"metadata":{"revision":"x@sha1:zz"}}`,
		`{"application":"<no value>"}`,
		`{"involvedObject":{"kind":"Kustomization","namespace":"flux-system","name":"checkout"},"severity":"info","reason":"ReconciliationSucceeded",` +
			`"metadata":{"revision":"latest@sha256:` + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" +
			`","originRevision":"main@sha1:0123456789abcdef0123456789abcdef01234567","environment":"production"}}`,
		`{"application":"checkout","namespace":"argocd","environment":"production","revision":"sha256:` +
			"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + `","health":"Healthy"}`,
		`[]`, `{`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for name, decode := range map[string]func([]byte) (Event, error){"flux": decodeFlux, "argocd": decodeArgoCD} {
			ev, err := decode(body)
			if err != nil {
				if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrIrrelevant) {
					t.Fatalf("%s: error is neither malformed nor irrelevant: %v", name, err)
				}
				continue
			}
			usable := (ev.Revision != "" || ev.OCI != "") && (ev.Revision == "" || validCommit(ev.Revision)) &&
				(ev.OCI == "" || promotion.ValidOCIRevision(ev.OCI)) && (ev.Origin == "" || validCommit(ev.Origin))
			if !usable || ev.App == "" || ev.Environment == "" || ev.Source != name {
				t.Fatalf("%s: decoded an event the processing cannot use: %+v", name, ev)
			}
		}
	})
}
