package gitrepo

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/internal/sshkey"
)

// TestVerifyCommit: a commit signed by a listed key is good for its
// principal; an unlisted key, an unsigned commit and a malformed list are
// not.
func TestVerifyCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, _ := newRepo(t)
	alice, eve := sshkey.New(t, "alice@example.com"), sshkey.New(t, "eve@example.com")
	head, err := r.Resolve(ctx, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	commit := func(k *sshkey.Key) string {
		t.Helper()
		c := r
		if k != nil {
			c = r.Signing()
			c.Env = append(c.Env, k.Env()...)
		}
		sha, err := c.Commit(ctx, head, map[string][]byte{"a.yaml": []byte("a: 2\n")}, "change")
		if err != nil {
			t.Fatal(err)
		}
		return sha
	}
	signers := []byte("# approvers\n" + alice.Line())
	for _, tc := range []struct {
		name, rev, principal, problem string
	}{
		{"listed key", commit(&alice), "alice@example.com", ""},
		{"unlisted key", commit(&eve), "", "is not in the allowed-signers file"},
		{"unsigned", commit(nil), "", "not signed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := r.VerifyCommit(ctx, tc.rev, signers)
			if err != nil {
				t.Fatal(err)
			}
			if s.Good() != (tc.problem == "") || s.Principal != tc.principal || !strings.Contains(s.Problem(), tc.problem) {
				t.Fatalf("%+v: %q", s, s.Problem())
			}
		})
	}
	if s, err := r.VerifyCommit(ctx, commit(&alice), []byte("alice@example.com ssh-ed25519 AAAA\n")); err != nil || s.Good() {
		t.Fatalf("a malformed key verified: %+v %v", s, err)
	}
	if _, err := r.VerifyCommit(ctx, "--help", signers); err == nil {
		t.Fatal("an option as a revision")
	}
}

func TestFirstParentRange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, dir := newRepo(t)
	base := gittest.Run(t, dir, "rev-parse", "HEAD")
	gittest.Run(t, dir, "commit", "-q", "--allow-empty", "-m", "one")
	one := gittest.Run(t, dir, "rev-parse", "HEAD")
	gittest.Run(t, dir, "commit", "-q", "--allow-empty", "-m", "two")
	two := gittest.Run(t, dir, "rev-parse", "HEAD")
	got, err := r.FirstParentRange(ctx, base, "HEAD")
	if err != nil || strings.Join(got, " ") != one+" "+two {
		t.Fatalf("%v %v, want %s %s", got, err, one, two)
	}
	if a, c, err := r.Identities(ctx, one); err != nil || a != "t@example.invalid" || c != "t@example.invalid" {
		t.Fatalf("identities %q %q %v", a, c, err)
	}
}

func TestParseAllowedSigners(t *testing.T) {
	t.Parallel()
	k := sshkey.New(t, "alice@example.com")
	// The wording of each refusal: testdata/allowed-signers.golden.
	msgs := golden.ErrorLines(t, "testdata/allowed-signers.golden", 6)
	for _, tc := range []struct {
		name, text string
		line       int // of the refusal; 0: parses
	}{
		{"ok", "# c\n\n" + k.Line() + "bob@example.com,b2@example.com namespaces=\"git,file\" " + k.Public + " bob\n", 0},
		{"too few fields", "alice@example.com ssh-ed25519\n", 1},
		{"pattern principal", "*@example.com " + k.Public + "\n", 1},
		{"unknown option", "alice@example.com nope " + k.Public + "\n", 1},
		{"not base64", "\nalice@example.com ssh-ed25519 !!!\n", 2},
		{"wrong type", "alice@example.com ssh-rsa " + strings.Fields(k.Public)[1] + "\n", 1},
		{"unterminated quote", "alice@example.com namespaces=\"git " + k.Public + "\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseAllowedSigners([]byte(tc.text))
			var se *SignersError
			switch {
			case tc.line == 0 && (err != nil || len(got) != 2 || got[1].Principals[1] != "b2@example.com" || got[0].Line != 3):
				t.Fatalf("%+v %v", got, err)
			case tc.line != 0 && (!errors.As(err, &se) || se.Line != tc.line):
				t.Fatalf("%v, want line %d", err, tc.line)
			case tc.line != 0:
				msgs(tc.name, errors.New(strings.NewReplacer(k.Public, "KEY", strings.Fields(k.Public)[1], "KEYDATA").Replace(err.Error())))
			}
		})
	}
}

func FuzzParseAllowedSigners(f *testing.F) {
	f.Add([]byte("alice@example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBo2 c\n"))
	f.Add([]byte("a,b namespaces=\"git\" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 x\n# c\n"))
	f.Add([]byte("a cert-authority,valid-after=\"2020\" sk-ssh-ed25519@openssh.com AAAA\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseAllowedSigners(data)
		if err != nil {
			return
		}
		for _, s := range got {
			if len(s.Principals) == 0 || s.KeyType == "" || s.Key == "" || s.Line < 1 {
				t.Fatalf("accepted %+v", s)
			}
		}
	})
}
