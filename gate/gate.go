package gate

import (
	"context"
	"time"

	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/trust"
)

// Request is a change to check: a pull request of the GitOps repository,
// its revisions and what the promotion gate needs besides them.
type Request struct {
	// Base and Head are the PR's revisions.
	Base, Head string
	// DriftFiles are drift records to check the artifact's tag against,
	// besides those under drift/ at head.
	DriftFiles []string
	Now        time.Time
	// Renderer is throughline's version.
	Renderer string
	// Trust are the registry options and cache the supply-chain gate
	// re-verifies the recorded evidence with (trust.go).
	Trust trust.Options
}

// Verdict is the every-PR check's verdict on a change: the repository
// check and, for a change that carries one promotion record, the promotion
// gate's report. OK only when both pass.
type Verdict struct {
	Repository *RepositoryReport `json:"repository"`
	Promotion  *PromotionReport  `json:"promotion,omitempty"`
	OK         bool              `json:"ok"`
}

// Refusals counts the verdict's refusals.
func (v *Verdict) Refusals() int {
	n := len(v.Repository.Refusals)
	if v.Promotion != nil {
		n += len(v.Promotion.Refusals)
	}
	return n
}

// CheckChange is the check every pull request can be required to pass:
// the repository check of the change and, when it carries one promotion
// record, the promotion gate (CheckPromotion) on the same revisions.
// Every reason to refuse is a finding of the verdict (OK false); an error
// is a failure to decide.
func CheckChange(ctx context.Context, r *gitops.Repo, req Request) (*Verdict, error) {
	rc, err := CheckRepository(ctx, r, req)
	if err != nil {
		return nil, err
	}
	v := &Verdict{Repository: rc, OK: rc.OK}
	if rc.Promotion == nil {
		return v, nil
	}
	req.Base, req.Head = rc.Base, rc.Head
	if v.Promotion, err = CheckPromotion(ctx, r, req); err != nil {
		return nil, err
	}
	v.OK = v.OK && v.Promotion.OK
	return v, nil
}
