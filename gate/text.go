package gate

import (
	"fmt"
	"io"

	"github.com/throughline-dev/throughline/render"
)

// The text forms of the gate's reports: what `throughline check` and
// `promote check` print, one line per difference and per refusal, the
// same words a pull request's reader sees. Write errors are the writer's
// (the first one is returned).

// WriteText writes the verdict of the every-PR check as text.
func (v *Verdict) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	v.Repository.text(ew)
	if v.Promotion != nil {
		v.Promotion.text(ew)
	}
	if v.OK {
		ew.printf("OK: no refusal\n")
	}
	return ew.err
}

// WriteText writes the verdict of promote check as text.
func (r *PromotionReport) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	r.text(ew)
	return ew.err
}

func (r *PromotionReport) text(w *errWriter) {
	if r.Repository != nil { // no promotion record: the repository check judged the change
		r.Repository.text(w)
		if r.OK {
			w.printf("OK: no refusal\n")
		}
		return
	}
	if r.PromotionID != "" { // no one record: the refusals say why
		w.printf("promotion %s: %s %s -> %s (state %s)\n", r.PromotionID, r.App, r.Digest, r.Environment, r.State)
	}
	w.printf("files changed (%d):\n", len(r.Files))
	for _, f := range r.Files {
		w.printf("  %s\n", f)
	}
	w.printf("rendered differences (%d):\n", len(r.Changes))
	for _, c := range r.Changes {
		w.printf("  %s\n", c.String())
	}
	for _, f := range r.Warnings {
		w.printf("WARNING %s\n", f.Reason)
	}
	if r.OK {
		w.printf("OK: only the verified, approved artifact changes\n")
		return
	}
	for _, s := range r.Refusals {
		w.printf("REFUSED %s\n", s)
	}
}

// text writes the repository check: per environment its differences with
// their class, what judges it that changes, then the refusals.
func (r *RepositoryReport) text(w *errWriter) {
	w.printf("change %s..%s: %d file(s) changed\n", ShortRevision(r.Base), ShortRevision(r.Head), len(r.Files))
	if r.Registry == "" {
		w.printf("no environment registered (throughline-policy.yaml at base): nothing rendered\n")
	}
	for _, e := range r.Environments {
		environmentText(w, e)
	}
	if p := r.Promotion; p != nil {
		w.printf("promotion of %s to %s (%s): judged by promote check\n", p.App, p.Environment, p.Record)
	}
	for _, j := range r.Judges {
		need := "not protected: listed, no approval needed"
		if j.Protected {
			need = fmt.Sprintf("protected: %d of %d signed approvals", j.Approved, j.Required)
		}
		w.printf("what judges %s changes (change %s; %s):\n", j.Environment, j.Change, need)
		for _, c := range j.Words() {
			w.printf("  %s\n", c)
		}
	}
	for _, f := range r.Preexisting {
		w.printf("already at base (not refused) %s: %s\n", f.Rule, f.Reason)
	}
	for _, f := range r.Findings {
		w.printf("REFUSED %s: %s\n", f.Rule, f.Reason)
	}
}

func environmentText(w *errWriter, e EnvironmentDiff) {
	prot := ""
	if e.Protected {
		prot = "protected, "
	}
	n := 0
	for _, o := range e.Overlays {
		n += len(o.Changes)
		if o.Checks != "" {
			n++
		}
	}
	w.printf("environment %s (%scluster %s): %d overlay(s), %d difference(s)\n", e.Name, prot, e.Cluster, len(e.Overlays), n)
	for _, o := range e.Overlays {
		if len(o.Changes) == 0 && o.Checks == "" {
			continue
		}
		note := ""
		if o.Promotion {
			note = ", the promotion's target: judged by promote check"
		}
		w.printf("  %s (app %s%s):\n", o.Path, o.App, note)
		for _, c := range o.Changes {
			w.printf("    %s\n", c.String())
		}
		if o.Checks != "" {
			w.printf("    runtime checks %s (%s)\n", o.Checks, render.ChecksFile)
		}
	}
}

// ShortRevision is a commit id cut to 12 characters for a line of text.
func ShortRevision(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// errWriter keeps the first write error and writes nothing after it.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
