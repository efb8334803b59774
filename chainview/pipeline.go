package chainview

import "fmt"

// Stage is an app in one environment of its pipeline (the grid's order:
// an environment before those it verifies), and how the digest moved
// into it from the stage before.
type Stage struct {
	*Cell
	// Moving says how the digest stands against the stage before ("" for
	// the first): the same digest (promoted), another one, or none yet.
	Moving string
}

// Stages are the app's environments left to right, as Kargo shows a
// pipeline.
func (a *App) Stages() []Stage {
	out := make([]Stage, 0, len(a.Cells))
	var prev *Cell
	for _, c := range a.Cells {
		s := Stage{Cell: c}
		if prev != nil {
			s.Moving = moving(prev, c)
		}
		out = append(out, s)
		prev = c
	}
	return out
}

// moving says how the digest of c stands against prev's.
func moving(prev, c *Cell) string {
	p, r := prev.Record, c.Record
	switch {
	case p == nil && r == nil:
		return "no digest yet"
	case p == nil:
		return fmt.Sprintf("%s came from elsewhere (%s has no record)", short(r.Artifact.Digest), prev.Environment)
	case r == nil:
		return fmt.Sprintf("%s of %s not promoted here yet", short(p.Artifact.Digest), prev.Environment)
	case p.Artifact.Digest == r.Artifact.Digest:
		return fmt.Sprintf("%s promoted from %s", short(r.Artifact.Digest), prev.Environment)
	}
	return fmt.Sprintf("%s has %s, here %s", prev.Environment, short(p.Artifact.Digest), short(r.Artifact.Digest))
}
