package ledger

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteStatusTable writes rows as a table, one attempt each: its state,
// digest, promotion, ref and branch, and a note (the reason, the
// approval's expiry, why a branch is merged or closed).
func WriteStatusTable(w io.Writer, rows []StatusRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "APP\tENV\tATTEMPT\tSTATE\tDIGEST\tPROMOTION\tREF\tBRANCH\tNOTE")
	for _, row := range rows {
		note := row.Reason
		if row.ExpiresAt != nil && note == "" {
			note = "approval expires " + row.ExpiresAt.Format(time.RFC3339)
		}
		if row.Why != "" {
			note = strings.TrimPrefix(note+"; "+row.Why, "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", row.App, row.Environment, row.Attempt, row.State, ShortDigest(row.Digest),
			row.PromotionID, row.Ref, row.Branch, note)
	}
	return tw.Flush()
}

// ShortDigest is a digest cut to its algorithm and 12 hex digits
// (sha256:4b7e2a91c3d5), as the status table, the commit messages and the
// web view show it; a string without an algorithm, or not longer than
// that, is returned as it is.
func ShortDigest(d string) string {
	if alg, hex, ok := strings.Cut(d, ":"); ok && len(hex) > 12 {
		return alg + ":" + hex[:12]
	}
	return d
}
