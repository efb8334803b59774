package notifier

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/trust"
	"github.com/throughline-dev/throughline/vsa"
)

// DefaultSummaryTimeout bounds the publication of one verification
// summary, its retries and the commit that records it included.
const DefaultSummaryTimeout = 10 * time.Minute

// Summaries publishes the signed verification summary (package vsa) of
// every acceptance the processor commits: after the evidence commit, in
// the background, so that publishing never holds up or undoes an
// acceptance. A summary the registry took is recorded in the evidence by a
// commit of its own (evidence.GitSink.RecordSummary); one it refused
// leaves the record ACCEPTED, counts in the metric, goes to OnError and
// to the commit status as a note.
type Summaries struct {
	// Publisher signs and attaches the summaries.
	Publisher *vsa.Publisher
	// Verifier is the summaries' verifier.id (empty: vsa.DefaultVerifier).
	Verifier string
	// Repository is the GitOps repository's URL the summaries name with
	// the acceptance commit.
	Repository string
	// Timeout bounds one publication (default DefaultSummaryTimeout).
	Timeout time.Duration
	// OnPublished is told of every summary published and recorded, and
	// OnError of every one that was not; nil is silent.
	OnPublished func(ev *evidence.Record, pub *vsa.Published)
	OnError     func(ev *evidence.Record, err error)
	// Metrics, when set, counts the publications by result.
	Metrics *Metrics

	wg sync.WaitGroup
}

// Wait waits for the publications in flight.
func (s *Summaries) Wait() { s.wg.Wait() }

// start publishes the summary of the acceptance w in the background,
// under ctx's values but not its cancellation (the delivery is answered
// before the summary is published).
func (s *Summaries) start(ctx context.Context, p *Processor, w *evidence.Written) {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultSummaryTimeout
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		pub, err := s.Publish(ctx, p, w)
		if err != nil {
			s.count("failed")
			if s.OnError != nil {
				s.OnError(w.Evidence, err)
			}
			if p.Status != nil {
				note := *w.Evidence
				note.SummaryNote = "verification summary not published (see the notifier's log)"
				p.Status(&note)
			}
			return
		}
		if pub.Existing {
			s.count("existing")
		} else {
			s.count("published")
		}
		if s.OnPublished != nil {
			s.OnPublished(w.Evidence, pub)
		}
	}()
}

func (s *Summaries) count(result string) {
	if s.Metrics != nil {
		s.Metrics.Summaries.WithLabelValues(result).Inc()
	}
}

// Publish builds the summary of the acceptance w (its commit and evidence)
// from the promotion record and the repository at that commit, publishes
// it and records it in the evidence, now: what a new acceptance of p
// starts in the background (the metric and the callbacks are start's).
func (s *Summaries) Publish(ctx context.Context, p *Processor, w *evidence.Written) (*vsa.Published, error) {
	ev := w.Evidence
	sum, err := s.summary(ctx, p, w)
	if err != nil {
		return nil, fmt.Errorf("the verification summary of %s in %s (%s): %w", ev.App, ev.Environment, ev.PromotionID, err)
	}
	pub, err := s.Publisher.Publish(ctx, sum)
	if err != nil {
		return nil, err
	}
	_, err = p.Git.RecordSummary(ctx, ev.App, ev.Environment, ev.PromotionID, evidence.Summary{
		Statement: pub.Statement, Bundle: pub.Bundle, Manifest: pub.Manifest, AcceptanceCommit: w.Commit})
	if err != nil {
		return pub, fmt.Errorf("published as %s, not recorded in the evidence: %w", pub.Manifest, err)
	}
	return pub, nil
}

// summary is what the summary of the acceptance w says: the record at the
// acceptance commit gives the charts and the supply-chain evidence, the
// environment registry the trust policy, the target path the checks file.
func (s *Summaries) summary(ctx context.Context, p *Processor, w *evidence.Written) (*vsa.Summary, error) {
	ev := w.Evidence
	img, err := name.NewDigest(ev.Image, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("image %q: %w", ev.Image, err)
	}
	rec, err := promotion.ReadRecord(ctx, &gitops.Repo{Repo: p.Git.Repo}, w.Commit, ev.App, ev.Environment)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, fmt.Errorf("no promotion record at %s", gitrepo.Short(w.Commit))
	}
	sum := &vsa.Summary{
		Image: img.Context().Name() + "@" + ev.ArtifactDigest, Verifier: s.Verifier, Environment: ev.Environment, Time: ev.Time,
		RenderedHash: ev.RenderedHash, Repository: s.Repository, AcceptanceCommit: w.Commit,
		Evidence: evidence.Path(ev.Environment, ev.App, ev.PromotionID),
	}
	for _, c := range rec.Artifact.Charts {
		sum.Charts = append(sum.Charts, vsa.Chart{Name: c.Name, Digest: c.Digest})
	}
	if rec.Artifact.Evidence != nil {
		sum.Inputs = rec.Artifact.Evidence.Digests()
	}
	read := func(ctx context.Context, file string) ([]byte, error) {
		return p.Git.Repo.ReadFile(ctx, w.Commit, file)
	}
	if p.Registry != nil {
		reg, err := p.Registry(ctx)
		if err != nil {
			return nil, err
		}
		e, err := reg.Lookup(ev.Environment)
		if err != nil {
			return nil, err
		}
		if e.Trust != nil {
			pol, err := trust.Compile(ctx, ev.Environment, e.Trust, read)
			if err != nil {
				return nil, fmt.Errorf("the trust policy of %s: %w", ev.Environment, err)
			}
			sum.TrustPolicy = "sha256:" + pol.Hash()
		}
	}
	checks, err := read(ctx, path.Join(rec.Target.Path, render.ChecksFile))
	switch {
	case errors.Is(err, gitrepo.ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("the checks file of %s: %w", rec.Target.Path, err)
	default:
		sum.Checks = fmt.Sprintf("sha256:%x", sha256.Sum256(checks))
	}
	return sum, nil
}
