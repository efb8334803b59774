// Package signedevidence signs test fixtures' runtime evidence as the
// notifier does (evidence.Sign with a notifier key from sshkey), so that
// the gates, which accept only evidence signed by a key the policy's
// evidenceSigners lists, read fixtures like a deployment's evidence. It
// is apart from sshkey because gitrepo's tests use sshkey and evidence
// imports gitrepo.
package signedevidence

import (
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/internal/sshkey"
)

// Sign is n's signature of an evidence file's bytes, the content of its
// <file>.sig beside it (evidence.Sign).
func Sign(t testing.TB, n sshkey.Notifier, data []byte) []byte {
	t.Helper()
	sig, err := evidence.Sign(data, n)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// SignAll adds, beside every evidence file in files (a .json file in an
// evidence/ folder of the GitOps root, at the top or below), its signature
// by n.
func SignAll[T ~string | ~[]byte](t testing.TB, n sshkey.Notifier, files map[string]T) {
	t.Helper()
	for p, data := range files {
		if strings.Contains("/"+p, "/"+evidence.Dir+"/") && strings.HasSuffix(p, ".json") {
			files[evidence.SignaturePath(p)] = T(Sign(t, n, []byte(data)))
		}
	}
}
