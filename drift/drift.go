// Package drift decides whether a mutable reference (an image tag, a Helm
// chart version) kept naming one immutable digest: from the resolutions
// recorded over time and, optionally, the source's answer now. It is the
// one algorithm behind image drift (package registry) and chart drift
// (package chartsource); each supplies its resolutions and its source.
package drift

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Resolution is one recorded answer: Reference resolved to Digest at At,
// as the file Where records.
type Resolution struct {
	// Key groups the resolutions of one reference (its normal form).
	Key string
	// Reference is the reference as shown.
	Reference string
	Digest    string
	At        time.Time
	// Where names the record (a file).
	Where string
}

// Gone is the digest of a reference the source no longer serves.
const Gone = "nothing"

// Now is the source's answer now for reference r: its digest (Gone when
// it no longer serves r) and how to name that answer, or an error when the
// source cannot answer (the reference is then unverifiable, not decided).
type Now func(ctx context.Context, r Resolution) (digest, where string, err error)

// Moved is a reference seen naming more than one digest.
type Moved struct {
	// Kind is what the reference is ("tag", "chart"), for the message.
	Kind      string
	Reference string
	// Digests are the distinct digests in the order first seen (the
	// records by time, then the source now).
	Digests []string
	// Seen says where each digest came from.
	Seen []string
}

func (m Moved) Error() string {
	return fmt.Sprintf("REJECTED %s %s resolved to %s (%s)", m.Kind, m.Reference, strings.Join(m.Digests, " and "), strings.Join(m.Seen, "; "))
}

// Report is the outcome of [Check].
type Report struct {
	// References is how many distinct references the resolutions name.
	References int
	Moved      []Moved
	// Unverifiable are the errors of the source's answers now.
	Unverifiable []error
}

// Check groups the resolutions by Key, each group by time, and reports the
// references whose digests differ, between records or, when now is not
// nil, from the source's answer now.
func Check(ctx context.Context, kind string, rs []Resolution, now Now) Report {
	by := map[string][]Resolution{}
	var keys []string
	for _, r := range rs {
		if _, ok := by[r.Key]; !ok {
			keys = append(keys, r.Key)
		}
		by[r.Key] = append(by[r.Key], r)
	}
	sort.Strings(keys)
	rep := Report{References: len(keys)}
	for _, k := range keys {
		group := by[k]
		sort.SliceStable(group, func(i, j int) bool { return group[i].At.Before(group[j].At) })
		m := Moved{Kind: kind, Reference: group[0].Reference}
		add := func(dig, where string) {
			for i, x := range m.Digests {
				if x == dig {
					m.Seen[i] += ", " + where
					return
				}
			}
			m.Digests = append(m.Digests, dig)
			m.Seen = append(m.Seen, dig+" in "+where)
		}
		for _, r := range group {
			add(r.Digest, r.Where+" at "+r.At.Format(time.RFC3339))
		}
		if now != nil {
			dig, where, err := now(ctx, group[0])
			if err != nil {
				rep.Unverifiable = append(rep.Unverifiable, err)
			} else {
				add(dig, where)
			}
		}
		if len(m.Digests) > 1 {
			rep.Moved = append(rep.Moved, m)
		}
	}
	return rep
}
