package drift

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	res := func(key, dig, where string, at time.Duration) Resolution {
		return Resolution{Key: key, Reference: key, Digest: dig, At: t0.Add(at), Where: where}
	}
	down := errors.New("registry unreachable")
	for _, c := range []struct {
		name    string
		rs      []Resolution
		now     Now
		moved   []Moved
		refs    int
		pending int
	}{
		{name: "one digest", rs: []Resolution{res("app:1", "sha256:a", "s.json", 0), res("app:1", "sha256:a", "p.json", time.Hour)}, refs: 1},
		{name: "moved between records, ordered by time",
			rs:   []Resolution{res("app:1", "sha256:b", "p.json", time.Hour), res("app:1", "sha256:a", "s.json", 0)},
			refs: 1, moved: []Moved{{Kind: "tag", Reference: "app:1", Digests: []string{"sha256:a", "sha256:b"},
				Seen: []string{"sha256:a in s.json at 2026-12-01T10:00:00Z", "sha256:b in p.json at 2026-12-01T11:00:00Z"}}}},
		{name: "moved now", rs: []Resolution{res("app:1", "sha256:a", "s.json", 0)},
			now:  func(context.Context, Resolution) (string, string, error) { return "sha256:c", "the registry now", nil },
			refs: 1, moved: []Moved{{Kind: "tag", Reference: "app:1", Digests: []string{"sha256:a", "sha256:c"},
				Seen: []string{"sha256:a in s.json at 2026-12-01T10:00:00Z", "sha256:c in the registry now"}}}},
		{name: "gone now", rs: []Resolution{res("app:1", "sha256:a", "s.json", 0)},
			now:  func(context.Context, Resolution) (string, string, error) { return Gone, "the registry now (gone)", nil },
			refs: 1, moved: []Moved{{Kind: "tag", Reference: "app:1", Digests: []string{"sha256:a", Gone},
				Seen: []string{"sha256:a in s.json at 2026-12-01T10:00:00Z", "nothing in the registry now (gone)"}}}},
		{name: "source down: not decided", rs: []Resolution{res("app:1", "sha256:a", "s.json", 0), res("app:2", "sha256:b", "s.json", 0)},
			now:  func(context.Context, Resolution) (string, string, error) { return "", "", down },
			refs: 2, pending: 2},
		{name: "same answer now", rs: []Resolution{res("app:1", "sha256:a", "s.json", 0)},
			now:  func(context.Context, Resolution) (string, string, error) { return "sha256:a", "the registry now", nil },
			refs: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := Check(context.Background(), "tag", c.rs, c.now)
			if rep.References != c.refs || len(rep.Unverifiable) != c.pending || !reflect.DeepEqual(rep.Moved, c.moved) {
				t.Fatalf("report %+v\nwant %d references, %d unverifiable, moved %+v", rep, c.refs, c.pending, c.moved)
			}
		})
	}
	m := Moved{Kind: "chart", Reference: "oci://r/c:1.2.3", Digests: []string{"sha256:a", "sha256:b"}, Seen: []string{"x", "y"}}
	if got := m.Error(); got != "REJECTED chart oci://r/c:1.2.3 resolved to sha256:a and sha256:b (x; y)" {
		t.Errorf("Error() = %q", got)
	}
}
