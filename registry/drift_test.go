package registry

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/drift"
	"github.com/throughline-dev/throughline/internal/golden"
)

// TestTagMovedIsRefused is the negative experiment: a tag is resolved, the
// tag is moved to another build, it is resolved again; the two resolutions
// disagree and the check refuses, naming both digests. The registry now
// agrees with the second record, and still the first disagrees.
func TestTagMovedIsRefused(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, nil)
	ref := reg.Host + "/shop/checkout:1.4.2"
	ctx := testContext(t, 20*time.Second)
	c := newClient(t, fastOptions())

	first := pushImage(t, ref)
	d1, err := c.ResolveDigest(ctx, ref)
	must(t, err)
	r1, err := NewRecord(d1, time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	must(t, err)

	second := pushImage(t, ref) // the tag moves
	d2, err := c.ResolveDigest(ctx, ref)
	must(t, err)
	r2, err := NewRecord(d2, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	must(t, err)
	if d1.Digest != digestOf(t, first) || d2.Digest != digestOf(t, second) || d1.Digest == d2.Digest {
		t.Fatalf("resolutions %s, %s; pushed %s, %s", d1.Digest, d2.Digest, digestOf(t, first), digestOf(t, second))
	}

	records := []SourcedRecord{{r2, "production.json"}, {r1, "staging.json"}}
	for _, now := range []DigestResolver{nil, c} {
		rep := CheckDrift(ctx, records, now)
		if len(rep.Drifts) != 1 || len(rep.Unverifiable) != 0 || rep.Tags != 1 {
			t.Fatalf("report = %+v, want one drift", rep)
		}
		msg := rep.Drifts[0].Error()
		want := "REJECTED tag " + ref + " resolved to " + d1.Digest + " and " + d2.Digest
		if !strings.HasPrefix(msg, want) {
			t.Fatalf("drift = %q, want prefix %q", msg, want)
		}
		if !strings.Contains(msg, "staging.json") || !strings.Contains(msg, "production.json") {
			t.Fatalf("drift %q does not name both records", msg)
		}
	}

	// One record, the tag moved since: the registry now disagrees.
	rep := CheckDrift(ctx, []SourcedRecord{{r1, "staging.json"}}, c)
	if len(rep.Drifts) != 1 || len(rep.Drifts[0].Digests) != 2 || rep.Drifts[0].Digests[1] != d2.Digest ||
		rep.Drifts[0].Seen[1] != d2.Digest+" in the registry now" {
		t.Fatalf("report = %+v, want the registry's digest", rep)
	}
	// One record, the tag did not move: accepted.
	if rep := CheckDrift(ctx, []SourcedRecord{{r2, "production.json"}}, c); len(rep.Drifts) != 0 || len(rep.Unverifiable) != 0 {
		t.Fatalf("unmoved tag: %+v", rep)
	}
	// Offline, one record: nothing to compare with.
	if rep := CheckDrift(ctx, []SourcedRecord{{r1, "staging.json"}}, nil); len(rep.Drifts) != 0 {
		t.Fatalf("offline single record: %+v", rep)
	}
}

func TestDriftTagGoneAndUnreachable(t *testing.T) {
	reg := newTestRegistry(t, nil)
	ctx := testContext(t, 20*time.Second)
	c := newClient(t, fastOptions())
	d := &Descriptor{Reference: reg.Host + "/shop/gone:v1", Repository: reg.Host + "/shop/gone", Registry: reg.Host, Tag: "v1", Digest: "sha256:" + strings.Repeat("c", 64)}
	r, err := NewRecord(d, time.Now())
	must(t, err)
	rep := CheckDrift(ctx, []SourcedRecord{{r, "a.json"}}, c)
	if len(rep.Drifts) != 1 || len(rep.Drifts[0].Digests) != 2 || rep.Drifts[0].Digests[1] != drift.Gone {
		t.Fatalf("report = %+v", rep)
	}
	o := fastOptions()
	o.Timeout = time.Second
	d.Reference, d.Repository, d.Registry = "registry.invalid/shop/x:v1", "registry.invalid/shop/x", "registry.invalid"
	r, err = NewRecord(d, time.Now())
	must(t, err)
	rep = CheckDrift(ctx, []SourcedRecord{{r, "a.json"}}, newClient(t, o))
	if len(rep.Drifts) != 0 || len(rep.Unverifiable) != 1 || !errors.Is(rep.Unverifiable[0], ErrUnreachable) {
		t.Fatalf("report = %+v, want unverifiable", rep)
	}
}

func TestParseRecord(t *testing.T) {
	t.Parallel()
	good := `{"apiVersion":"throughline.dev/v1alpha1","kind":"TagResolution","reference":"nginx:1.27",` +
		`"repository":"index.docker.io/library/nginx","tag":"1.27","registry":"index.docker.io",` +
		`"digest":"sha256:` + strings.Repeat("a", 64) + `","resolvedAt":"2026-11-29T10:00:00Z"}`
	r, err := ParseRecord("good.json", []byte(good))
	must(t, err)
	// Round trip through both encodings.
	for _, y := range []bool{false, true} {
		data, err := r.Marshal(y)
		must(t, err)
		r2, err := ParseRecord("x", data)
		must(t, err)
		if r2 != r {
			t.Fatalf("round trip (yaml=%v): %+v != %+v", y, r2, r)
		}
	}
	// The wording of each refusal: testdata/parse-record.golden.
	msgs := golden.ErrorLines(t, "testdata/parse-record.golden", 14)
	for _, tc := range []struct{ name, in string }{
		{"empty", ``},
		{"null", `null`},
		{"not yaml", "\t: ["},
		{"unknown field", strings.Replace(good, `"kind"`, `"extra":1,"kind"`, 1)},
		{"two values", good + good},
		{"wrong kind", strings.Replace(good, "TagResolution", "Other", 1)},
		{"short digest", strings.Replace(good, strings.Repeat("a", 64), "abc", 1)},
		{"upper digest", strings.Replace(good, strings.Repeat("a", 64), strings.Repeat("A", 64), 1)},
		{"digest reference", strings.Replace(good, `"nginx:1.27"`, `"nginx@sha256:`+strings.Repeat("b", 64)+`"`, 1)},
		{"repository mismatch", strings.Replace(good, "library/nginx", "library/redis", 1)},
		{"tag mismatch", strings.Replace(good, `"tag":"1.27"`, `"tag":"1.28"`, 1)},
		{"no time", strings.Replace(good, `,"resolvedAt":"2026-11-29T10:00:00Z"`, "", 1)},
		{"duplicate key yaml", "apiVersion: a\napiVersion: b\n"},
		{"too large", strings.Repeat(" ", maxRecordSize+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseRecord("in.json", []byte(tc.in))
			var re *RecordError
			if !errors.As(err, &re) || re.File != "in.json" {
				t.Fatalf("err = %v, want a RecordError naming in.json", err)
			}
			msgs(tc.name, err)
		})
	}
}

// FuzzParseRecord: the drift record reader takes files from pull requests;
// it must never panic, and whatever it accepts must be valid and survive a
// round trip.
func FuzzParseRecord(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"throughline.dev/v1alpha1","kind":"TagResolution","reference":"nginx:1.27","repository":"index.docker.io/library/nginx","tag":"1.27","registry":"index.docker.io","digest":"sha256:` + strings.Repeat("a", 64) + `","resolvedAt":"2026-11-29T10:00:00Z"}`))
	f.Add([]byte("apiVersion: throughline.dev/v1alpha1\nkind: TagResolution\nreference: '[::1]:5000/app:v1'\nrepository: '[::1]:5000/app'\ntag: v1\nregistry: '[::1]:5000'\ndigest: sha256:" + strings.Repeat("0", 64) + "\nresolvedAt: 2026-11-29T10:00:00Z\n"))
	f.Add([]byte("- a\n- b"))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRecord("fuzz", data)
		if err != nil {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("accepted an invalid record: %v", err)
		}
		for _, y := range []bool{false, true} {
			out, err := r.Marshal(y)
			if err != nil {
				t.Fatal(err)
			}
			r2, err := ParseRecord("again", out)
			if err != nil || !r2.ResolvedAt.Equal(r.ResolvedAt) || r2.Digest != r.Digest || r2.Reference != r.Reference {
				t.Fatalf("round trip (yaml=%v): %v\n%s", y, err, out)
			}
		}
	})
}
