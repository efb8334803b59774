package health

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/exitcode"
)

// Err is the verdict as an error of the exit-code contract: nil when
// Verified, invalid input for an invalid Acceptance, a refusal (rule
// acceptance) for a mismatch, and not decided (try again) otherwise.
func (r *Report) Err() error {
	id := r.Namespace + "/" + r.Name
	switch {
	case r.Outcome == Verified:
		return nil
	case r.Reason == v1alpha1.ReasonInvalid:
		return &exitcode.InvalidInput{Err: fmt.Errorf("Acceptance %s: %s", id, r.Message)}
	case r.Outcome == Mismatch:
		return &exitcode.Refusal{Rule: "acceptance", Reason: fmt.Sprintf("Acceptance %s: %s: %s", id, r.Reason, r.Message)}
	default:
		return exitcode.NotDecided(fmt.Errorf("Acceptance %s: %s: %s", id, r.Reason, r.Message))
	}
}

// WriteText writes the verdict as text: the Acceptance, its reason, one
// row per observed image of every workload, then what is wrong with each
// workload not verified.
func (r *Report) WriteText(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "Acceptance %s/%s (generation %d, rendered hash %s)\n%s: %s\n",
		r.Namespace, r.Name, r.Generation, r.RenderedHash, r.Reason, r.Message); err != nil {
		return err
	}
	if len(r.Workloads) == 0 {
		return nil
	}
	if err := writeTable(w, r.Workloads); err != nil {
		return err
	}
	for _, wl := range r.Workloads {
		if wl.Outcome != Verified && wl.Message != "" {
			if _, err := fmt.Fprintf(w, "  %s %s/%s: %s\n", wl.Kind, wl.Namespace, wl.Name, strings.TrimSpace(wl.Message)); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeTable writes one row per observed image of every workload.
func writeTable(w io.Writer, wls []WorkloadReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nWORKLOAD\tCONTAINER\tOUTCOME\tMATCH\tPODS\tIMAGE ID")
	for _, wl := range wls {
		id := wl.Kind + " " + wl.Namespace + "/" + wl.Name
		if !wl.Found {
			fmt.Fprintf(tw, "%s\t-\t%s\t-\t0\tnot found\n", id, wl.Outcome)
			continue
		}
		if len(wl.Containers) == 0 {
			fmt.Fprintf(tw, "%s\t-\t%s\t-\t%d\t%s\n", id, wl.Outcome, wl.Pods, wl.Message)
		}
		for _, c := range wl.Containers {
			name := c.Name
			if c.Init {
				name += " (init)"
			}
			if c.Skipped != "" || len(c.Observed) == 0 {
				fmt.Fprintf(tw, "%s\t%s\t%s\t-\t%d\t%s\n", id, name, c.Outcome, wl.Pods, cmp.Or(c.Skipped, wl.Message))
				continue
			}
			for _, o := range c.Observed {
				match := cmp.Or(string(o.Match), "-")
				if o.Platform != "" {
					match += " " + o.Platform
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", id, name, o.Outcome, match, o.Pods, cmp.Or(o.ImageID, "(none yet)"))
			}
		}
	}
	return tw.Flush()
}
