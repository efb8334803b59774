package window

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// FuzzSchedule compiles what a pull request may write in the policy's
// windows and freezes (any cron text, time zone, duration, dates) and
// checks it at any time: never a panic, and a closed environment's next
// opening is later than the check and really open (checked again there).
func FuzzSchedule(f *testing.F) {
	base := at("2026-12-07T10:00:00Z").Unix()
	f.Add("0 9 * * 1-4", "Europe/Berlin", int64(8*time.Hour), base+86400, base+5*86400, base)
	f.Add("*/5 * * * *", "", int64(time.Minute), int64(0), int64(0), base)
	f.Add("0 0 30 2 *", "UTC", int64(time.Hour), int64(0), int64(0), base)
	f.Add("@daily", "America/New_York", int64(time.Hour), base-86400, base+86400, base)
	f.Add("30 2 * 3 0", "Europe/London", int64(time.Hour), int64(0), int64(0), at("2027-03-28T00:00:00Z").Unix())
	f.Add("* * * * *", "Asia/Kolkata", int64(time.Nanosecond), base, base+366*86400, base)
	f.Fuzz(func(t *testing.T, schedule, tz string, d, from, until, now int64) {
		const span = 200 * 366 * 86400 // dates within two centuries of 1970
		clamp := func(s int64) time.Time { return time.Unix(s%span, 0).UTC() }
		e := v1alpha1.EnvironmentPolicy{
			Windows: []v1alpha1.PromotionWindow{{Schedule: schedule, TimeZone: tz, Duration: metav1.Duration{Duration: time.Duration(d)}}},
		}
		if from != 0 || until != 0 {
			e.Freezes = []v1alpha1.Freeze{{Name: "f", From: metav1.NewTime(clamp(from)), Until: metav1.NewTime(clamp(until))}}
		}
		s, err := Compile("production", e)
		if err != nil {
			if s != nil {
				t.Fatalf("a schedule with an error: %v", err)
			}
			return
		}
		when := clamp(now)
		c := s.Check(when)
		if c == nil {
			return
		}
		if c.Rule != RuleOutsideWindow && c.Rule != RuleFrozen {
			t.Fatalf("rule %q", c.Rule)
		}
		if c.Next.IsZero() {
			return
		}
		if !c.Next.After(when) || c.Next.After(when.Add(horizon)) {
			t.Fatalf("closed at %s, next opening %s: not within the horizon after it", when, c.Next)
		}
		if again := s.Check(c.Next); again != nil {
			t.Fatalf("closed at %s, said to open at %s, but closed then too: %s", when, c.Next, again.Reason)
		}
	})
}
