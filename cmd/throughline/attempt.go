package main

import (
	"context"
	"time"

	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
)

// attemptFlags name one promotion attempt: the repository, the app, the
// target environment and, when more than one is open, the attempt branch.
type attemptFlags struct {
	repo, app, to, branch string
}

func (a *attemptFlags) addFlags(f *pflag.FlagSet) {
	f.StringVar(&a.repo, "repo", "", "the GitOps repository")
	f.StringVar(&a.app, "app", "", "application name")
	f.StringVar(&a.to, "to", "", "target environment of the attempt")
	f.StringVar(&a.branch, "branch", "", "attempt branch (default: the only open one of APP/TO)")
}

// open checks that the attempt is named and opens its repository.
func (a *attemptFlags) open(ctx context.Context) (*gitops.Repo, error) {
	if a.app == "" || a.to == "" {
		return nil, exitcode.Usagef("--app and --to are required")
	}
	return openRepo(ctx, a.repo)
}

// approvalFlags are the flags of a signed approval: the approver (a
// cross-check of the signing key's principal) and the expiry.
type approvalFlags struct {
	approver, expires string
}

func (a *approvalFlags) addFlags(f *pflag.FlagSet, approverUsage string) {
	f.StringVar(&a.approver, "approver", "", approverUsage)
	f.StringVar(&a.expires, "expires", "", "expiry: a duration from now (24h) or an RFC 3339 time")
}

// expiry reads --expires (required): a duration from now or an RFC 3339
// time, in the future.
func (a *approvalFlags) expiry(now time.Time) (time.Time, error) {
	if a.expires == "" {
		return time.Time{}, exitcode.Usagef("--expires is required")
	}
	return parseExpiry(a.expires, now)
}

// parseExpiry reads --expires: a duration from now or an RFC 3339 time,
// in the future.
func parseExpiry(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, exitcode.Usagef("--expires %s: must be in the future", s)
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, exitcode.Usagef("--expires %q: want a duration (24h) or an RFC 3339 time", s)
	}
	if !t.After(now) {
		return time.Time{}, exitcode.Usagef("--expires %s is in the past", s)
	}
	return t, nil
}
