package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/delivery"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
)

// deliveryOptions are the flags of promote status that print the delivery
// metrics instead of the records (docs/delivery-metrics.md).
type deliveryOptions struct {
	since string
	now   func() time.Time
}

func (d *deliveryOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&d.since, "since", "", `print the delivery metrics of the attempts of this window instead of the records, `+
		`per app and environment: a duration ("720h") or days ("30d"); see docs/delivery-metrics.md`)
}

// runDelivery prints the delivery metrics of o.delivery's window.
func (o *promoteStatusOptions) runDelivery(ctx context.Context, stdout io.Writer) error {
	if o.all {
		return exitcode.Usagef("--since and --all do not go together: the metrics count every attempt Git holds")
	}
	window, err := delivery.ParseWindow(o.delivery.since)
	if err != nil {
		return exitcode.Usagef("--since: %v", err)
	}
	now := time.Now()
	if o.delivery.now != nil {
		now = o.delivery.now()
	}
	r, err := gitops.Open(ctx, o.repo)
	if err != nil {
		return err
	}
	if err := r.ReadInProcess(); err != nil { // every version of every record: no git process each
		return err
	}
	rep, err := delivery.Read(ctx, r, delivery.Options{Since: now.Add(-window), Now: now})
	if err != nil {
		return err
	}
	if o.app != "" {
		kept := rep.Apps[:0]
		for _, f := range rep.Apps {
			if f.App == o.app {
				kept = append(kept, f)
			}
		}
		rep.Apps = kept
	}
	if o.output == "json" {
		return promoteWriteJSON(stdout, rep)
	}
	return writeDeliveryText(stdout, rep)
}

// writeDeliveryText writes the report as a table (durations as median/p90)
// and the files skipped.
func writeDeliveryText(w io.Writer, rep *delivery.Report) error {
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
			f.AttemptsPerPromotion.Median, f.AttemptsPerPromotion.P90, f.Outcomes[delivery.OutcomeAccepted], f.Outcomes[delivery.OutcomeHalted],
			f.Outcomes[delivery.OutcomeRejected], f.Outcomes[delivery.OutcomeOpen], medianP90(f.OpenedToApproved), medianP90(f.MergedToObserved),
			medianP90(f.ObservedToAccepted), halts(f.Halts), f.Invalid)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.Apps) == 0 {
		fmt.Fprintln(w, "No attempt in the window.")
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

func medianP90(d delivery.Durations) string {
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
	for _, c := range delivery.Classes {
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
