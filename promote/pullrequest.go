package promote

import (
	"context"
	"fmt"
	"strings"

	"github.com/throughline-dev/throughline/forge"
)

// PullRequestBody is the description of p's pull request: the target, its
// rendered hashes and the classified diff.
func (p *Proposal) PullRequestBody() string {
	var b strings.Builder
	rec := p.Record
	fmt.Fprintf(&b, "Promotion `%s` (attempt %d): `%s` into **%s** (`%s`, cluster `%s`).\n\n", rec.PromotionID, rec.Attempt,
		rec.Artifact.Image, rec.Target.Environment, rec.Target.Path, rec.Target.Cluster)
	fmt.Fprintf(&b, "Target rendered hash: `%s` (was `%s`), throughline %s.\n\n", rec.Target.RenderedHash, rec.Target.BaseRenderedHash,
		rec.Target.Renderer)
	b.WriteString("| class | object | field | before | after |\n|---|---|---|---|---|\n")
	for _, c := range p.Changes {
		fmt.Fprintf(&b, "| %s | %s | %s | `%s` | `%s` |\n", c.Class, c.Object, c.Field, c.Before, c.After)
	}
	b.WriteString("\nThe PR job (`throughline promote check`) passes once the record is VERIFIED and APPROVED.\n")
	return b.String()
}

// PullRequestBody is the description of a rollback's pull request: the
// prior acceptance that backs it, the acceptances that were not rollback
// targets, the acknowledged irreversible migrations, then the proposal's.
func (res *RollbackResult) PullRequestBody() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Rollback of `%s` in `%s` from `%s` to `%s`.\n\n", res.Proposal.Record.App, res.Proposal.Record.Target.Environment,
		res.From, res.To.Artifact.Digest)
	fmt.Fprintf(&b,
		"The target digest was ACCEPTED in this environment as `%s` (record and evidence at commit `%s`, observed revision `%s`, evidence `%s`); "+
			"the record is VERIFIED by that prior acceptance, which `throughline promote check` re-reads from Git.\n\n",
		res.To.PromotionID, res.To.Commit, res.To.ObservedRevision, res.To.Evidence)
	for _, u := range res.Unproven {
		fmt.Fprintf(&b, "Warning: acceptance claimed without proof, not a rollback target: %s\n\n", u.String())
	}
	if len(res.IrreversibleWarning) > 0 {
		fmt.Fprintf(&b, "**Irreversible migration acknowledged** on: %s\n\n", strings.Join(res.IrreversibleWarning, ", "))
	}
	b.WriteString(res.Proposal.PullRequestBody())
	return b.String()
}

// OpenPullRequest opens the pull request of the pushed proposal p on base
// with fc and records its URL in p, then closes the pull requests of the
// attempts p superseded (recording their numbers). Nothing is opened
// without a forge (fc nil) or for an attempt that existed already (its
// pull request is open).
func (p *Proposal) OpenPullRequest(ctx context.Context, fc *forge.Client, base, title, body string) error {
	if fc == nil || p.Existing {
		return nil
	}
	pr, err := fc.OpenPullRequest(ctx, forge.PullRequest{Title: title, Head: p.Branch, Base: base, Body: body})
	if err != nil {
		return fmt.Errorf("branch %s pushed, but opening the pull request failed: %w", p.Branch, err)
	}
	p.PR = pr.URL
	for i, s := range p.Superseded {
		closed, err := fc.ClosePullRequests(ctx, s.Branch)
		if err != nil {
			return fmt.Errorf("%s opened, but closing the pull request of the superseded attempt %s (%s) failed: %w", p.PR, s.PromotionID,
				s.Branch, err)
		}
		p.Superseded[i].PullRequests = closed
	}
	return nil
}
