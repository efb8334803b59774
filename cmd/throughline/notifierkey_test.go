package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/throughline-dev/throughline/internal/signedevidence"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/promotion"
)

// notifiers are the notifier keys of the test repositories, by GitOps
// root.
var notifiers sync.Map

// signEvidence signs every evidence file of files (paths relative to the
// GitOps root root) as the repository's notifier does, adding each
// signature beside it. The first call makes the notifier's key and lists
// it in root's policy (evidenceSigners, a policy of its own when root has
// none): evidence counts only signed by a listed key.
func signEvidence(t *testing.T, root string, files map[string]string) {
	t.Helper()
	v, loaded := notifiers.LoadOrStore(root, sshkey.NewNotifier(t, "dev", "staging", "production"))
	n := v.(sshkey.Notifier)
	if !loaded {
		t.Cleanup(func() { notifiers.Delete(root) })
		pol := sshkey.Policy
		if data, err := os.ReadFile(filepath.Join(root, promotion.PolicyFile)); err == nil {
			pol = listEvidenceSigners(string(data))
		}
		files[promotion.PolicyFile], files[sshkey.EvidenceSignersFile] = pol, n.Line()
	}
	signedevidence.SignAll(t, n, files)
}

// listEvidenceSigners is the policy pol naming the evidenceSigners file that
// lists the repository's notifier key (signEvidence), when pol names none: a
// test that replaces a fixture's policy keeps its signed evidence counting.
func listEvidenceSigners(pol string) string {
	if strings.Contains(pol, "evidenceSigners:") {
		return pol
	}
	return pol + sshkey.PolicyLine
}
