package promote

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// RejectRequest asks to reject app's open attempt for To.
type RejectRequest struct {
	App, To string
	// Branch is the attempt branch ("" for the only open one of App/To).
	Branch string
	// Reason says why; it is recorded.
	Reason string
	// By records who rejected.
	By  string
	Now time.Time
}

// Reject moves the attempt's record to REJECTED with the reason, by a
// compare-and-swap commit on its branch. A record that is already final
// (ACCEPTED, HALTED, REJECTED) is refused: a fix makes a new candidate.
func Reject(ctx context.Context, r *gitops.Repo, req RejectRequest) (*Transition, error) {
	if strings.TrimSpace(req.Reason) == "" {
		return nil, exitcode.Usagef("--reason is required: a REJECTED record says why")
	}
	b, err := AttemptBranch(ctx, r, req.Branch, req.App, req.To)
	if err != nil {
		return nil, err
	}
	return updateRecord(ctx, r, b, req.App, req.To, func(_ context.Context, _ string, rec *promotion.Record) (string, error) {
		err := rec.Stop(promotion.Rejected, req.Reason, req.Now, req.By)
		return fmt.Sprintf("promotion %s: REJECTED: %s\n", rec.PromotionID, req.Reason), exitcode.RefuseErr(RuleTransition, err)
	})
}
