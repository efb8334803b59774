package delivery

import (
	"testing"
	"time"
)

func TestParseWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "30d", want: 30 * 24 * time.Hour},
		{in: "1d", want: 24 * time.Hour},
		{in: "720h", want: 720 * time.Hour},
		{in: "90m", want: 90 * time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "", bad: true},
		{in: "d", bad: true},
		{in: "0d", bad: true},
		{in: "-3d", bad: true},
		{in: "-1h", bad: true},
		{in: "0s", bad: true},
		{in: "3.5d", bad: true},
		{in: "99999999999d", bad: true},
		{in: "36501d", bad: true},
		{in: "30days", bad: true},
		{in: "1e3d", bad: true},
	} {
		got, err := ParseWindow(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseWindow(%q) = %s, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseWindow(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParseWindow(f *testing.F) {
	for _, s := range []string{"30d", "720h", "-1d", "1e9d", "d", "1h30m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseWindow(s)
		if err == nil && (d <= 0 || d > maxWindow) {
			t.Fatalf("ParseWindow(%q) = %s", s, d)
		}
	})
}
