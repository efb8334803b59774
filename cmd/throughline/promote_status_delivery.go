package main

import (
	"context"
	"io"
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
		return writeJSON(stdout, rep)
	}
	return rep.WriteText(stdout)
}
