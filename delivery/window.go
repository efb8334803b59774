package delivery

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxWindow bounds a window (100 years): a longer one overflows a
// time.Duration, and no repository is older.
const maxWindow = 100 * 365 * 24 * time.Hour

// ParseWindow reads the length of a window: a Go duration ("720h",
// "90m") or a number of days ("30d"). It must be positive and at most a
// hundred years.
func ParseWindow(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok && days != "" && !strings.ContainsAny(days, "hmsuµn") {
		n, err := strconv.ParseUint(days, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("window %q: want a duration (720h) or days (30d)", s)
		}
		if n > uint64(maxWindow/(24*time.Hour)) {
			return 0, fmt.Errorf("window %q: more than %d days", s, maxWindow/(24*time.Hour))
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("window %q: want a duration (720h) or days (30d)", s)
		}
	}
	if d <= 0 || d > maxWindow {
		return 0, fmt.Errorf("window %q: want more than 0 and at most %d days", s, maxWindow/(24*time.Hour))
	}
	return d, nil
}
