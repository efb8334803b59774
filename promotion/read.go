package promotion

import (
	"context"
	"fmt"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
)

// AppEnv is the app and the target environment the record names (its
// path is RecordPath of both): it makes a Record a gitops.Named.
func (r *Record) AppEnv() (string, string) { return r.App, r.Target.Environment }

// parseInput is Parse for gitops.Read: a record that cannot be used is
// invalid input (exit 4); the *RecordError already names the file.
func parseInput(file string, data []byte) (*Record, error) {
	rec, err := Parse(file, data)
	if err != nil {
		return nil, &exitcode.InvalidInput{Err: err}
	}
	return rec, nil
}

// ReadRecord reads the record of app in env at rev of the GitOps
// repository: nil (and no error) when there is none. A record that does
// not parse, or that names another app or environment than its path, is
// invalid input (exit 4, a *RecordError or the mismatch naming the file);
// a failing git is an error. Every record read goes through it.
func ReadRecord(ctx context.Context, repo *gitops.Repo, rev, app, env string) (*Record, error) {
	file := RecordPath(app, env)
	rec, found, err := gitops.ReadNamed(ctx, repo, rev, file, app, env, parseInput)
	if err != nil {
		if exitcode.Code(err) == exitcode.Invalid {
			return nil, err
		}
		return nil, fmt.Errorf("reading %s at %s: %w", file, rev, err)
	}
	if !found {
		return nil, nil
	}
	return rec, nil
}

// ReadPolicy reads the promotion policy (PolicyFile) at rev of the GitOps
// repository: nil (and no error) when there is none, every default then
// being the strict one. A policy that does not parse is invalid input.
func ReadPolicy(ctx context.Context, repo *gitops.Repo, rev string) (*Policy, error) {
	parse := func(file string, data []byte) (*Policy, error) {
		p, err := ParsePolicy(file, data)
		if err != nil {
			return nil, &exitcode.InvalidInput{Err: err}
		}
		return p, nil
	}
	p, found, err := gitops.ReadParsed(ctx, repo, rev, PolicyFile, parse, (*Policy).DeepCopy)
	if err != nil {
		if exitcode.Code(err) == exitcode.Invalid {
			return nil, err
		}
		return nil, fmt.Errorf("reading %s at %s: %w", PolicyFile, rev, err)
	}
	if !found {
		return nil, nil
	}
	return p, nil
}

// ReadRegistry reads the environment registry of the policy (PolicyFile) at
// rev: the empty registry when there is none. Read it at the base: a change
// must not edit the rules that judge it.
func ReadRegistry(ctx context.Context, repo *gitops.Repo, rev string) (*environment.Registry, error) {
	p, err := ReadPolicy(ctx, repo, rev)
	if err != nil {
		return nil, err
	}
	return Registry(p)
}
