package gitrepo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
)

// Signing returns a copy of r whose commits (Commit, Update) are signed
// with the user's own SSH signing key: git's user.signingkey (a key file,
// a "key::" public key with ssh-agent, or gpg.ssh.defaultKeyCommand),
// always in git's ssh format (gpg.format=ssh).
func (r *Repo) Signing() *Repo {
	c := *r
	c.Env = append([]string(nil), r.Env...)
	c.sign = true
	return &c
}

// Signature is what git says about a commit's signature, verified against
// an allowed-signers file.
type Signature struct {
	// Status is git's %G?: G good, U good but no principal in the
	// allowed-signers file, N none, B bad, E cannot be checked, ...
	Status string
	// Principal is the allowed-signers principal of the key (%GS).
	Principal string
	// Key is the signing key's fingerprint (%GK).
	Key string
	// SSH reports whether the signature is an SSH signature (never a
	// GPG one, which git would check against another trust store).
	SSH bool
}

// Good reports whether the commit is SSH-signed by a key the
// allowed-signers file lists, for a principal.
func (s *Signature) Good() bool {
	return s != nil && s.SSH && s.Status == "G" && s.Principal != ""
}

// Problem says why the signature is not good ("" when it is).
func (s *Signature) Problem() string {
	switch {
	case s.Good():
		return ""
	case s.Status == "N":
		return "the commit is not signed"
	case !s.SSH:
		return "the commit is not signed with an SSH key (gpg.format=ssh)"
	case s.Status == "U" || s.Principal == "":
		return fmt.Sprintf("the signing key %s is not in the allowed-signers file", s.Key)
	case s.Status == "B":
		return "the signature is bad (the commit was changed after signing)"
	}
	return fmt.Sprintf("git cannot accept the signature (status %s, key %s)", s.Status, s.Key)
}

// VerifyCommit checks rev's signature with git itself (log %G?) against
// allowedSigners, the content of an allowed-signers file, which it writes
// to a private temporary file for git and removes after.
func (r *Repo) VerifyCommit(ctx context.Context, rev string, allowedSigners []byte) (*Signature, error) {
	if strings.HasPrefix(rev, "-") || rev == "" {
		return nil, fmt.Errorf("verify the signature of %q: not a revision", rev)
	}
	f, err := os.CreateTemp("", "throughline-allowed-signers-") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("verify the signature of %s: %w", rev, err)
	}
	defer func() { _ = os.Remove(f.Name()) }() // a private scratch copy of a file in the repository
	_, err = f.Write(allowedSigners)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("verify the signature of %s: writing the allowed signers: %w", rev, err)
	}
	out, err := r.run(ctx, nil, "-c", "gpg.ssh.allowedSignersFile="+f.Name(),
		"log", "-1", "--format=%G?%n%GS%n%GK", "--end-of-options", rev)
	if err != nil {
		return nil, fmt.Errorf("verify the signature of %s: %w", rev, err)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for len(lines) < 3 {
		lines = append(lines, "")
	}
	raw, err := r.runBytes(ctx, nil, nil, "cat-file", "commit", rev)
	if err != nil {
		return nil, fmt.Errorf("verify the signature of %s: %w", rev, err)
	}
	header, _, _ := bytes.Cut(raw, []byte("\n\n"))
	ssh := false
	for _, l := range strings.Split(string(header), "\n") {
		if strings.HasPrefix(l, "gpgsig ") || strings.HasPrefix(l, "gpgsig-sha256 ") {
			_, sig, _ := strings.Cut(l, " ")
			ssh = sig == "-----BEGIN SSH SIGNATURE-----"
		}
	}
	return &Signature{Status: lines[0], Principal: lines[1], Key: lines[2], SSH: ssh}, nil
}

// FirstParentRange lists the commits of head not in base along head's
// first parents, oldest first: the commits a pull request adds.
func (r *Repo) FirstParentRange(ctx context.Context, base, head string) ([]string, error) {
	for _, rev := range []string{base, head} {
		if strings.HasPrefix(rev, "-") || rev == "" {
			return nil, fmt.Errorf("commits of %s..%s: %q is not a revision", base, head, rev)
		}
	}
	out, err := r.run(ctx, nil, "rev-list", "--first-parent", "--reverse", head, "^"+base, "--")
	if err != nil {
		return nil, fmt.Errorf("commits of %s..%s: %w", base, head, err)
	}
	return strings.Fields(out), nil
}

// Identities are the author's and the committer's e-mail addresses of rev
// (free text: anyone can write any name there).
func (r *Repo) Identities(ctx context.Context, rev string) (author, committer string, err error) {
	out, err := r.run(ctx, nil, "log", "-1", "--format=%ae%n%ce", "--end-of-options", rev)
	if err != nil {
		return "", "", fmt.Errorf("author of %s: %w", rev, err)
	}
	a, c, _ := strings.Cut(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(a), strings.TrimSpace(c), nil
}

// Message is the commit message of rev.
func (r *Repo) Message(ctx context.Context, rev string) (string, error) {
	if strings.HasPrefix(rev, "-") || rev == "" {
		return "", fmt.Errorf("message of %q: not a revision", rev)
	}
	if m := r.reader(); m != nil {
		defer m.lock()()
		h, err := m.resolve(rev)
		if err != nil {
			return "", fmt.Errorf("message of %s: %w", rev, err)
		}
		c, err := m.repo.CommitObject(h)
		if err != nil {
			return "", fmt.Errorf("message of %s: %w", rev, err)
		}
		return c.Message, nil
	}
	out, err := r.run(ctx, nil, "log", "-1", "--format=%B", "--end-of-options", rev)
	if err != nil {
		return "", fmt.Errorf("message of %s: %w", rev, err)
	}
	return out, nil
}
