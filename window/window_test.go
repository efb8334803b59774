package window

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func dur(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

// weekdays: Monday to Thursday 09:00-17:00 in Berlin; a year-end freeze.
var weekdays = v1alpha1.EnvironmentPolicy{
	Windows: []v1alpha1.PromotionWindow{{Schedule: "0 9 * * 1-4", Duration: dur(8 * time.Hour), TimeZone: "Europe/Berlin"}},
	Freezes: []v1alpha1.Freeze{{Name: "year-end", From: metav1.NewTime(at("2026-12-21T00:00:00Z")), Until: metav1.NewTime(at("2027-01-04T00:00:00Z")),
		Reason: "the shops' busiest weeks"}},
}

func TestCheck(t *testing.T) {
	t.Parallel()
	s, err := Compile("production", weekdays)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, at   string
		rule, next string // rule "" = open
		reason     string
	}{
		// 2026-12-03 is a Thursday; Berlin is UTC+1 in December.
		{name: "inside the window", at: "2026-12-03T10:00:00Z"},
		{name: "the window's first minute", at: "2026-12-03T08:00:00Z"},
		{name: "the window's last second", at: "2026-12-03T15:59:59Z"},
		{name: "the window's end is closed", at: "2026-12-03T16:00:00Z", rule: RuleOutsideWindow, next: "2026-12-07T08:00:00Z",
			reason: "outside its 1 window(s)"},
		{name: "before the window in Berlin, inside it in UTC hours", at: "2026-12-03T07:30:00Z", rule: RuleOutsideWindow,
			next: "2026-12-03T08:00:00Z"},
		{name: "Friday", at: "2026-12-04T10:00:00Z", rule: RuleOutsideWindow, next: "2026-12-07T08:00:00Z"},
		{name: "summer time: 09:00 in Berlin is 07:00 UTC", at: "2026-07-02T07:30:00Z"},
		{name: "in the freeze, on a window's day", at: "2026-12-22T10:00:00Z", rule: RuleFrozen, next: "2027-01-04T08:00:00Z",
			reason: `freeze "year-end" from 2026-12-21T00:00:00Z until 2027-01-04T00:00:00Z (the shops' busiest weeks)`},
		{name: "the freeze's first second", at: "2026-12-21T00:00:00Z", rule: RuleFrozen, next: "2027-01-04T08:00:00Z"},
		{name: "the freeze's end is open again (inside a window)", at: "2027-01-04T09:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := s.Check(at(tc.at))
			if tc.rule == "" {
				if c != nil {
					t.Fatalf("closed at %s: %+v", tc.at, c)
				}
				return
			}
			if c == nil {
				t.Fatalf("open at %s, want %s", tc.at, tc.rule)
			}
			if c.Rule != tc.rule || c.Next.Format(time.RFC3339) != tc.next || !strings.Contains(c.Reason, tc.reason) ||
				!strings.Contains(c.Reason, "it opens next at "+tc.next) || !strings.HasPrefix(c.Reason, "production does not accept promotions at "+tc.at) {
				t.Fatalf("at %s: %+v, want %s, next %s, reason with %q", tc.at, c, tc.rule, tc.next, tc.reason)
			}
		})
	}
}

// TestCheckOpenWithout: no windows and no freezes is always open; a nil
// Schedule too; a freeze alone closes only its range.
func TestCheckOpenWithout(t *testing.T) {
	t.Parallel()
	var none *Schedule
	if c := none.Check(at("2026-12-25T00:00:00Z")); c != nil {
		t.Fatalf("nil schedule closed: %+v", c)
	}
	s, err := Compile("staging", v1alpha1.EnvironmentPolicy{Freezes: weekdays.Freezes})
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Check(at("2026-12-20T23:59:59Z")); c != nil {
		t.Fatalf("closed before the freeze: %+v", c)
	}
	c := s.Check(at("2026-12-25T12:00:00Z"))
	if c == nil || c.Rule != RuleFrozen || c.Field != "environments.staging.freezes[0]" || !c.Next.Equal(at("2027-01-04T00:00:00Z")) {
		t.Fatalf("in the freeze: %+v", c)
	}
}

// TestCheckNeverOpens: a window whose every opening falls in a freeze for
// more than the horizon says it opens no sooner than a year from now.
func TestCheckNeverOpens(t *testing.T) {
	t.Parallel()
	s, err := Compile("production", v1alpha1.EnvironmentPolicy{
		Windows: []v1alpha1.PromotionWindow{{Schedule: "0 9 29 2 *", Duration: dur(time.Hour)}}, // 29 February only
		Freezes: []v1alpha1.Freeze{{Name: "forever", From: metav1.NewTime(at("2026-01-01T00:00:00Z")), Until: metav1.NewTime(at("2040-01-01T00:00:00Z"))}},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Check(at("2026-12-03T10:00:00Z"))
	if c == nil || !c.Next.IsZero() || !strings.Contains(c.Reason, "no sooner than a year from now") {
		t.Fatalf("%+v", c)
	}
}

// TestCompileRefuses: what a careless or hostile policy change writes is
// refused naming the field.
func TestCompileRefuses(t *testing.T) {
	t.Parallel()
	ok := v1alpha1.PromotionWindow{Schedule: "0 9 * * 1-5", Duration: dur(8 * time.Hour)}
	from, until := metav1.NewTime(at("2026-12-21T00:00:00Z")), metav1.NewTime(at("2027-01-04T00:00:00Z"))
	for _, tc := range []struct {
		name string
		e    v1alpha1.EnvironmentPolicy
		want string
	}{
		{"no schedule", v1alpha1.EnvironmentPolicy{Windows: []v1alpha1.PromotionWindow{{Duration: dur(time.Hour)}}},
			"environments.production.windows[0].schedule: required"},
		{"six fields (seconds)", v1alpha1.EnvironmentPolicy{Windows: []v1alpha1.PromotionWindow{{Schedule: "0 0 9 * * 1-5", Duration: dur(time.Hour)}}},
			"environments.production.windows[0].schedule"},
		{"@every has no phase", v1alpha1.EnvironmentPolicy{Windows: []v1alpha1.PromotionWindow{{Schedule: "@every 1h", Duration: dur(time.Hour)}}},
			"@every has no fixed time of day"},
		{"a time zone inside the schedule", v1alpha1.EnvironmentPolicy{Windows: []v1alpha1.PromotionWindow{{Schedule: "TZ=Asia/Tokyo 0 9 * * *",
			Duration: dur(time.Hour)}}}, "name the time zone in timeZone"},
		{"no duration", v1alpha1.EnvironmentPolicy{Windows: []v1alpha1.PromotionWindow{{Schedule: "0 9 * * *"}}},
			"environments.production.windows[0].duration: 0s: must be positive"},
		{"negative duration", v1alpha1.EnvironmentPolicy{Windows: []v1alpha1.PromotionWindow{{Schedule: "0 9 * * *", Duration: dur(-time.Hour)}}},
			"must be positive"},
		{"a duration over a year (always open)", v1alpha1.EnvironmentPolicy{Windows: []v1alpha1.PromotionWindow{{Schedule: "0 9 * * *",
			Duration: dur(400 * 24 * time.Hour)}}}, "at most"},
		{"unknown time zone", v1alpha1.EnvironmentPolicy{Windows: []v1alpha1.PromotionWindow{{Schedule: "0 9 * * *", Duration: dur(time.Hour),
			TimeZone: "Mars/Olympus"}}}, "environments.production.windows[0].timeZone"},
		{"the machine's time zone", v1alpha1.EnvironmentPolicy{Windows: []v1alpha1.PromotionWindow{{Schedule: "0 9 * * *", Duration: dur(time.Hour),
			TimeZone: "Local"}}}, "depends on the machine"},
		{"a freeze without a name", v1alpha1.EnvironmentPolicy{Freezes: []v1alpha1.Freeze{{From: from, Until: until}}},
			"environments.production.freezes[0].name: required"},
		{"a freeze without until", v1alpha1.EnvironmentPolicy{Freezes: []v1alpha1.Freeze{{Name: "x", From: from}}}, "from and until are both required"},
		{"a freeze that ends before it starts", v1alpha1.EnvironmentPolicy{Freezes: []v1alpha1.Freeze{{Name: "x", From: until, Until: from}}},
			"is not after from"},
		{"a freeze named twice", v1alpha1.EnvironmentPolicy{Freezes: []v1alpha1.Freeze{{Name: "x", From: from, Until: until},
			{Name: "x", From: from, Until: until}}}, "environments.production.freezes[1].name: \"x\": listed twice"},
		{"rollbackInFreeze typo", v1alpha1.EnvironmentPolicy{Windows: []v1alpha1.PromotionWindow{ok}, RollbackInFreeze: "alow"},
			"environments.production.rollbackInFreeze"},
		{"too many windows", v1alpha1.EnvironmentPolicy{Windows: make([]v1alpha1.PromotionWindow, maxWindows+1)}, "at most 32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile("production", tc.e)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestNextJumpsOverFreeze: a window opening every minute inside a month's
// freeze opens next when the freeze ends, not "no sooner than a year" (the
// search steps over the freeze, not through each of its minutes).
func TestNextJumpsOverFreeze(t *testing.T) {
	t.Parallel()
	s, err := Compile("production", v1alpha1.EnvironmentPolicy{
		Windows: []v1alpha1.PromotionWindow{{Schedule: "* * * * *", Duration: dur(time.Minute)}},
		Freezes: []v1alpha1.Freeze{{Name: "month", From: metav1.NewTime(at("2026-12-01T00:00:00Z")), Until: metav1.NewTime(at("2027-01-01T00:00:00Z"))}},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Check(at("2026-12-03T10:00:00Z"))
	if c == nil || c.Rule != RuleFrozen || !c.Next.Equal(at("2027-01-01T00:00:00Z")) {
		t.Fatalf("%+v, want frozen until 2027-01-01T00:00:00Z", c)
	}
}
