package registry

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable writes descriptors as a table: per image its platform (an index
// lists its children below it), digest, media type and config digest.
func WriteTable(w io.Writer, ds []*Descriptor) error {
	if len(ds) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tPLATFORM\tDIGEST\tMEDIA TYPE\tCONFIG")
	for _, d := range ds {
		plat := "-"
		if d.IsIndex() {
			plat = fmt.Sprintf("index (%d)", len(d.Children))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Reference, plat, d.Digest, d.MediaType, dash(d.ConfigDigest))
		for _, ch := range d.Children {
			fmt.Fprintf(tw, "  └─\t%s\t%s\t%s\t%s\n", ch.Platform, ch.Digest, ch.MediaType, dash(ch.ConfigDigest))
		}
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
