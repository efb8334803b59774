package trust

import (
	"testing"
	"time"
)

func TestSourceRepository(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"git+https://github.com/example/checkout@refs/heads/main": "https://github.com/example/checkout",
		"git+https://github.com/example/checkout.git@v1.2.3":      "https://github.com/example/checkout",
		"https://github.com/example/checkout":                     "https://github.com/example/checkout",
		"git+ssh://git@github.com/example/checkout@refs/tags/v1":  "ssh://git@github.com/example/checkout",
		"git+https://github.com/example/checkout-fork@main":       "https://github.com/example/checkout-fork",
	} {
		if got := sourceRepository(in); got != want {
			t.Errorf("sourceRepository(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReadScan(t *testing.T) {
	t.Parallel()
	finished := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	pred := func(findings string) []byte {
		return []byte(`{"scanner":{"uri":"pkg:x","result":[` + findings + `]},"metadata":{"scanFinishedOn":"2026-12-01T10:00:00Z"}}`)
	}
	tests := []struct {
		name     string
		data     []byte
		worst    int
		findings int
		bad      bool
	}{
		{"no findings", pred(""), 0, 0, false},
		{"words", pred(`{"id":"a","severity":[{"method":"nvd","score":"low"}]},{"id":"b","severity":[{"method":"nvd","score":"High"}]}`), 3, 2, false},
		{"cvss", pred(`{"id":"a","severity":[{"method":"cvss_score","score":"9.1"}]}`), 4, 1, false},
		{"highest of scores", pred(`{"id":"a","severity":[{"method":"nvd","score":"low"},{"method":"cvss","score":"5.0"}]}`), 2, 1, false},
		{"no score fails closed", pred(`{"id":"a"}`), 4, 1, false},
		{"NaN fails closed", pred(`{"id":"a","severity":[{"method":"cvss","score":"NaN"}]}`), 4, 1, false},
		{"no finish time", []byte(`{"scanner":{"uri":"x","result":[]}}`), 0, 0, true},
		{"no scanner", []byte(`{"metadata":{"scanFinishedOn":"2026-12-01T10:00:00Z"}}`), 0, 0, true},
		{"not JSON", []byte(`{`), 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := ReadScan(tt.data)
			if tt.bad {
				if err == nil {
					t.Fatalf("accepted: %+v", s)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Worst != tt.worst || s.Findings != tt.findings || !s.Finished.Equal(finished) {
				t.Errorf("got %+v, want worst %d of %d findings at %s", s, tt.worst, tt.findings, finished)
			}
		})
	}
}

// FuzzReadScan: the scan predicate comes from a registry; reading it never
// panics and a read scan is self-consistent.
func FuzzReadScan(f *testing.F) {
	f.Add([]byte(`{"scanner":{"uri":"pkg:x","result":[{"id":"a","severity":[{"method":"nvd","score":"7.0"}]}]},` +
		`"metadata":{"scanFinishedOn":"2026-12-01T10:00:00Z"}}`))
	f.Add([]byte(`{"scanner":{"result":[{"id":"a"}]},"metadata":{"scanFinishedOn":"0001-01-01T00:00:00Z"}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ReadScan(data)
		if err != nil {
			return
		}
		if s.Worst < 0 || s.Worst > 4 || s.Findings < 0 || s.Findings == 0 && s.Worst != 0 {
			t.Fatalf("inconsistent scan %+v", s)
		}
	})
}

// TestScanSummary: what candidacy records of a scan: the finish time, the
// worst severity as a word with how many findings have it, the count; a
// scan without findings is "none".
func TestScanSummary(t *testing.T) {
	t.Parallel()
	pred := func(findings string) []byte {
		return []byte(`{"scanner":{"uri":"pkg:x","result":[` + findings + `]},"metadata":{"scanFinishedOn":"2026-12-01T10:00:00+02:00"}}`)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want ScanSummary
	}{
		{"none", pred(""), ScanSummary{Worst: "none"}},
		{"two high of three", pred(`{"id":"a","severity":[{"method":"nvd","score":"high"}]},{"id":"b","severity":[{"method":"nvd","score":"low"}]},` +
			`{"id":"c","severity":[{"method":"cvss","score":"7.5"}]}`), ScanSummary{Worst: "high", WorstCount: 2, Findings: 3}},
		{"one unscored is critical", pred(`{"id":"a","severity":[{"method":"nvd","score":"high"}]},{"id":"b"}`),
			ScanSummary{Worst: "critical", WorstCount: 1, Findings: 2}},
	} {
		sc, err := ReadScan(tc.data)
		if err != nil {
			t.Fatal(err)
		}
		got := sc.Summary()
		tc.want.Finished = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
		if *got != tc.want || got.Finished.Location() != time.UTC {
			t.Errorf("%s: %+v, want %+v", tc.name, *got, tc.want)
		}
	}
}
