package delivery

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText writes the report as a table (durations as median/p90)
// and the files skipped.
func (rep *Report) WriteText(w io.Writer) error {
	since := "the beginning"
	if rep.Since != nil {
		since = rep.Since.Format(time.RFC3339)
	}
	fmt.Fprintf(w, "Delivery metrics at %s, from %s to %s (durations: median/p90)\n", rep.Revision, since, rep.Until.Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "APP\tENV\tPROMOTIONS\tATTEMPTS\tPER PROMOTION\tACCEPTED\tHALTED\tREJECTED\tOPEN\tOPENED>APPROVED\tMERGED>OBSERVED\t"+
		"OBSERVED>ACCEPTED\tHALTS\tINVALID")
	for _, f := range rep.Apps {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%g/%g\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%d\n", f.App, f.Environment, f.Promotions, f.Attempts,
			f.AttemptsPerPromotion.Median, f.AttemptsPerPromotion.P90, f.Outcomes[OutcomeAccepted], f.Outcomes[OutcomeHalted],
			f.Outcomes[OutcomeRejected], f.Outcomes[OutcomeOpen], medianP90(f.OpenedToApproved), medianP90(f.MergedToObserved),
			medianP90(f.ObservedToAccepted), halts(f.Halts), f.Invalid)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.Apps) == 0 {
		fmt.Fprintln(w, "No attempt in the window.")
	} else if err := rep.writeDORA(w); err != nil {
		return err
	}
	for _, p := range rep.Problems {
		at := ""
		if p.Commit != "" {
			at = " at " + p.Commit
		}
		fmt.Fprintf(w, "skipped %s%s: %s\n", p.File, at, p.Reason)
	}
	return nil
}

func medianP90(d Durations) string {
	if d.Count == 0 {
		return "-"
	}
	s := func(v float64) string { return (time.Duration(v) * time.Second).String() }
	return s(d.Median) + "/" + s(d.P90)
}

// halts lists the classes, the known ones first.
func halts(m map[string]int) string {
	var parts []string
	known := map[string]bool{}
	for _, c := range Classes {
		known[c] = true
		parts = append(parts, fmt.Sprintf("%s=%d", c, m[c]))
	}
	var other []string
	for c, n := range m {
		if !known[c] {
			other = append(other, fmt.Sprintf("%q=%d", c, n))
		}
	}
	sort.Strings(other)
	return strings.Join(append(parts, other...), " ")
}

// writeDORA writes the four keys of each app and environment.
func (rep *Report) writeDORA(w io.Writer) error {
	fmt.Fprintln(w, "\nDORA (lead time from candidacy; change failures: halted, rolled back, break-glass; durations: median/p90)")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "APP\tENV\tDEPLOYMENTS\tPER DAY\tLEAD TIME\tCHANGE FAILURE RATE\tFAILURES\tTIME TO RESTORE\tUNRESTORED")
	for _, f := range rep.Apps {
		d := f.DORA
		perDay := "-"
		if rep.Since != nil {
			perDay = fmt.Sprintf("%.2f", d.DeploymentsPerDay)
		}
		var kinds []string
		for _, k := range FailureKinds {
			kinds = append(kinds, fmt.Sprintf("%s=%d", k, d.ChangeFailures[k]))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%.0f%%\t%s\t%s\t%d\n", f.App, f.Environment, d.Deployments, perDay, medianP90(d.LeadTime),
			100*d.ChangeFailureRate, strings.Join(kinds, " "), medianP90(d.TimeToRestore), d.Unrestored)
	}
	return tw.Flush()
}
