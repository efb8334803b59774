package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/promotion"
)

// readmeSection is the README's section whose first ```sh block runs on
// the repository the walk leaves.
const readmeSection = "### Promote the verified digest"

// TestREADMEPromotionBlock lays out a checkout as make demo leaves it
// (bin/throughline built from this tree, bin/demo-chain walked), then
// runs the first ```sh block under "Promote the verified digest" in
// ../../README.md as it stands, with bash -euo pipefail from that
// checkout's directory, as a newcomer with a git identity of their own
// would paste it. Every command must succeed, and production's record on
// origin's main must then be the proposal of staging's digest, approved
// by alice and bob, RECONCILING at the merge of its branch.
func TestREADMEPromotionBlock(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI, walks the chain and runs the README's block (about a minute)")
	}
	needTools(t, "git", "go", "bash", "python3", "ssh-keygen")
	block, err := shBlock(filepath.Join("..", "..", "README.md"), readmeSection)
	if err != nil {
		t.Fatal(err)
	}
	// bash -e ignores a failure before the last command of an && list:
	// one command a line, each checked.
	if strings.Contains(block, "&&") {
		t.Fatalf("the README's block (%s) joins commands with &&, whose failures bash -e does not stop at:\n%s", readmeSection, block)
	}
	root := t.TempDir()
	tl := filepath.Join(root, "bin", "throughline")
	buildCLI(t, tl)
	out := filepath.Join(root, "bin", "demo-chain")
	var lines bytes.Buffer
	if err := run(t.Context(), config{Throughline: tl, Example: filepath.Join("..", "..", "examples", "gitops-env"), Out: out}, &lines); err != nil {
		t.Fatalf("the walk stopped: %v\n%s", err, lines.String())
	}
	origin := filepath.Join(out, "origin.git")
	before := originRecord(t, origin, "main", "production")
	staging := originRecord(t, origin, "main", "staging")
	if staging.State != promotion.Accepted || staging.Artifact.Digest == before.Artifact.Digest {
		t.Fatalf("the walk left staging %s %s, production %s: nothing to promote", staging.State, staging.Artifact.Digest, before.Artifact.Digest)
	}

	// The newcomer: a HOME with their own git identity, nothing else
	// (no system config, no cache directory, no GIT_* from the caller).
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"),
		[]byte("[user]\n\tname = newcomer\n\temail = newcomer@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "DOCKER_CONFIG=" + filepath.Join(home, ".docker"), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "HOME" && k != "DOCKER_CONFIG" && k != "THROUGHLINE_CACHE_DIR" && !strings.HasPrefix(k, "GIT_") {
			env = append(env, kv)
		}
	}
	sh := exec.CommandContext(t.Context(), "bash", "-euo", "pipefail", "-c", block)
	sh.Dir, sh.Env = root, env
	got, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's block (%s) failed: %v\n%s\n-- the block --\n%s", readmeSection, err, got, block)
	}
	t.Logf("the README's block:\n%s", got)

	rec := originRecord(t, origin, "main", "production")
	wantID := fmt.Sprintf("checkout-production-%s-1", strings.TrimPrefix(staging.Artifact.Digest, "sha256:")[:12])
	if rec.State != promotion.Reconciling || rec.PromotionID != wantID || rec.Artifact.Digest != staging.Artifact.Digest {
		t.Fatalf("production after the block: %s %s %s, want %s RECONCILING with staging's %s", rec.PromotionID, rec.State,
			rec.Artifact.Digest, wantID, staging.Artifact.Digest)
	}
	var approvers []string
	for _, a := range rec.Approvals {
		approvers = append(approvers, a.Approver)
	}
	slices.Sort(approvers)
	if !slices.Equal(approvers, []string{"alice@example.com", "bob@example.com"}) {
		t.Errorf("%s approved by %v, want alice and bob", rec.PromotionID, approvers)
	}
	// RECONCILING at the merge: reconcile's commit sits on the merge commit
	// the block pushed, whose second parent is the approved branch.
	merge := gitOut(t, origin, "rev-parse", "main~1")
	if rec.Reconciling == nil || rec.Reconciling.DesiredRevision != merge {
		t.Errorf("%s desires %+v, want the merge %s", rec.PromotionID, rec.Reconciling, merge)
	}
	if branch := originRecord(t, origin, "main~1^2", "production"); branch.PromotionID != wantID || branch.State != promotion.Approved {
		t.Errorf("the merge's second parent holds %s %s, want %s APPROVED", branch.PromotionID, branch.State, wantID)
	}
	if !strings.Contains(string(got), "RECONCILING") {
		t.Errorf("the block's last command (promote status) printed no RECONCILING record:\n%s", got)
	}
	// The repository is left on main at origin's main, clean, with the
	// newcomer's own identity again.
	work := filepath.Join(out, "gitops")
	if head, tip := gitOut(t, work, "rev-parse", "--abbrev-ref", "HEAD"), gitOut(t, work, "rev-parse", "HEAD"); head != "main" ||
		tip != gitOut(t, origin, "rev-parse", "main") {
		t.Errorf("the repository is on %s at %s, want main at origin's main", head, tip)
	}
	if st := gitOut(t, work, "status", "--porcelain"); st != "" {
		t.Errorf("the repository is not clean:\n%s", st)
	}
	if email, err := exec.Command("git", "-C", work, "config", "--local", "--get", "user.email").Output(); err == nil {
		t.Errorf("the block leaves user.email %s in the repository's config", bytes.TrimSpace(email))
	}
}

// shBlock is the body of the first ```sh block after the line heading
// in the Markdown file path.
func shBlock(path, heading string) (string, error) {
	md, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var body strings.Builder
	// in: under heading; fence: inside a fenced block (of any language),
	// capturing when it is the first ```sh one under heading.
	in, fence, capture := false, false, false
	for line := range strings.Lines(string(md)) {
		line = strings.TrimSuffix(line, "\n")
		switch {
		case fence && strings.HasPrefix(line, "```"):
			if capture {
				return body.String(), nil
			}
			fence = false
		case capture:
			body.WriteString(line + "\n")
		case fence:
		case strings.HasPrefix(line, "```"):
			fence, capture = true, in && line == "```sh"
		case line == heading:
			in = true
		case in && strings.HasPrefix(line, "#"):
			return "", fmt.Errorf("%s: no ```sh block under %q", path, heading)
		}
	}
	return "", fmt.Errorf("%s: no %q with a closed ```sh block", path, heading)
}

// originRecord is env's record of checkout at rev in the bare repository.
func originRecord(t *testing.T, origin, rev, env string) *promotion.Record {
	t.Helper()
	p := promotion.RecordPath(app, env)
	rec, err := promotion.Parse(p, []byte(gitOut(t, origin, "show", rev+":"+p)))
	if err != nil {
		t.Fatalf("%s at %s: %v", p, rev, err)
	}
	return rec
}

// gitOut runs git in dir (the caller's environment but no system config)
// and returns its trimmed output.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s in %s: %v", strings.Join(args, " "), dir, err)
	}
	return strings.TrimSpace(string(b))
}

// TestShBlock: the block is the first ```sh one under the heading, and a
// heading without one is an error (never an empty script that passes).
func TestShBlock(t *testing.T) {
	md := filepath.Join(t.TempDir(), "r.md")
	text := "## A\n```sh\nno\n```\n" + readmeSection + "\n\nprose\n\n```yaml\n# a comment\nk: v\n```\n```sh\necho one\necho two\n```\n```sh\nnot this\n```\n### Next\n```sh\nnor this\n```\n"
	if err := os.WriteFile(md, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := shBlock(md, readmeSection)
	if err != nil || got != "echo one\necho two\n" {
		t.Fatalf("shBlock = %q, %v", got, err)
	}
	if _, err := shBlock(md, "### Missing"); err == nil {
		t.Fatal("a missing heading gave no error")
	}
	if err := os.WriteFile(md, []byte(readmeSection+"\nprose\n### Next\n```sh\nx\n```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := shBlock(md, readmeSection); err == nil {
		t.Fatal("a section without a block gave no error")
	}
}
