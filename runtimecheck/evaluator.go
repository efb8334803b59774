package runtimecheck

import (
	"context"
	"time"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// maxQueryTimeout bounds a Prometheus query's timeout (the interval
// otherwise).
const maxQueryTimeout = 30 * time.Second

// Evaluator evaluates checks of every kind. A nil field makes the checks
// of its kind Unverifiable.
type Evaluator struct {
	Prometheus *Prometheus
	HTTP       *Prober
	Jobs       *Jobs
}

// Evaluate evaluates one check of the Acceptance o.
func (e *Evaluator) Evaluate(ctx context.Context, o Owner, c v1alpha1.RuntimeCheck) Result {
	switch {
	case c.Prometheus != nil:
		return e.Prometheus.Evaluate(ctx, c.Prometheus, min(Interval(c), maxQueryTimeout))
	case c.HTTP != nil:
		if e.HTTP == nil {
			return unverifiable("this verifier does not probe Services")
		}
		timeout := c.HTTP.MaxLatency.Duration
		if timeout <= 0 {
			timeout = Interval(c)
		}
		return e.HTTP.Probe(ctx, o, c.HTTP, timeout)
	case c.Job != nil:
		if e.Jobs == nil {
			return unverifiable("this verifier does not run Jobs")
		}
		return e.Jobs.Evaluate(ctx, o, c.Name, c.Job)
	}
	return unverifiable("the check declares none of prometheus, http, job")
}
