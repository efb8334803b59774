package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/throughline-dev/throughline/overlay"
	"github.com/throughline-dev/throughline/render"
)

// imageSetFlag is the repeatable --set flag; each value is validated when
// the flag is parsed, so a malformed one is a usage error naming --set.
type imageSetFlag struct{ sets []overlay.ImageSet }

func (f *imageSetFlag) String() string {
	var s []string
	for _, v := range f.sets {
		s = append(s, v.String())
	}
	return strings.Join(s, ",")
}

func (f *imageSetFlag) Set(v string) error {
	s, err := overlay.ParseImageSet(v)
	if err != nil {
		return err
	}
	for _, prev := range f.sets {
		if prev.Name == s.Name {
			return fmt.Errorf("%q: %s is already set (%s)", v, s.Name, prev)
		}
	}
	f.sets = append(f.sets, s)
	return nil
}

func (f *imageSetFlag) Type() string { return "NAME=[NEWNAME:]TAG@DIGEST" }

// runSet writes every --set into the images: of the application's own
// kustomization (overlay.SetImages) and prints what it said and did, also
// when it failed part way.
func runSet(ctx context.Context, opts render.Options, sets []overlay.ImageSet, stdout io.Writer) error {
	rep, err := overlay.SetImages(ctx, opts, sets)
	for _, l := range append(append([]string(nil), rep.Unchanged...), rep.Changes...) {
		if _, werr := fmt.Fprintln(stdout, l); werr != nil {
			return werr
		}
	}
	return err
}
