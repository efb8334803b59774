package committed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile"
)

// Source reads the committed checks from the GitOps repository.
type Source struct {
	Repo *gitops.Repo
	// Tip is the revision read: the branch the controllers deploy from,
	// as fetched (nil: Repo.BaseRev).
	Tip func(ctx context.Context) (string, error)
	// ParseQuery checks PromQL as the render did (nil: checkfile.LexQuery).
	ParseQuery checkfile.QueryParser
	// TipTTL is how long a resolved tip is reused (0: DefaultTipTTL), so
	// that every reconcile does not ask the remote.
	TipTTL time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu    sync.Mutex
	tip   string
	tipAt time.Time
}

// DefaultTipTTL is Source.TipTTL's default.
const DefaultTipTTL = 30 * time.Second

// CompareChecks is [Source.Judge] in the shape the verifier asks
// (health.CommittedChecks).
func (s *Source) CompareChecks(ctx context.Context, namespace, sourcePath string, live *v1alpha1.RuntimeChecks) (string, []string, error) {
	v, err := s.Judge(ctx, namespace, sourcePath, live)
	if err != nil {
		return "", nil, err
	}
	return v.Differs, v.ProbeNamespaces, nil
}

// revision is the tip, resolved at most once per TipTTL.
func (s *Source) revision(ctx context.Context) (string, error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	ttl := s.TipTTL
	if ttl <= 0 {
		ttl = DefaultTipTTL
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tip != "" && now().Sub(s.tipAt) < ttl {
		return s.tip, nil
	}
	tip := s.Tip
	if tip == nil {
		tip = s.Repo.BaseRev
	}
	rev, err := tip(ctx)
	if err != nil {
		return "", err
	}
	s.tip, s.tipAt = rev, now()
	return rev, nil
}

// Verdict is how a live Acceptance's checks compare with the committed
// ones.
type Verdict struct {
	// Revision is the commit read; File the checks file's path in it.
	Revision, File string
	// Differs says why the live checks must not run: they differ from the
	// committed ones, or the committed file or the Acceptance's place in
	// the registry is refused. Empty: they agree.
	Differs string
	// ProbeNamespaces are the namespaces besides the Acceptance's own that
	// its HTTP checks may probe: those the committed file names, each one
	// the registry binds to the app.
	ProbeNamespaces []string
}

// Judge compares live (an Acceptance's spec.checks) with the checks
// committed for its overlay sourcePath, judged for an Acceptance in
// namespace. An error is a failure to read Git (try again later).
func (s *Source) Judge(ctx context.Context, namespace, sourcePath string, live *v1alpha1.RuntimeChecks) (*Verdict, error) {
	rev, err := s.revision(ctx)
	if err != nil {
		return nil, fmt.Errorf("resolving the GitOps branch to read the committed checks: %w", err)
	}
	v := &Verdict{Revision: rev}
	dir := path.Clean(strings.TrimPrefix(sourcePath, "./"))
	if sourcePath == "" || path.IsAbs(dir) || dir == ".." || strings.HasPrefix(dir, "../") {
		v.Differs = fmt.Sprintf("spec.sourcePath %q is no overlay path of the repository", sourcePath)
		return v, nil
	}
	v.File = path.Join(dir, checkfile.File)
	reg, err := promotion.ReadRegistry(ctx, s.Repo, rev)
	if exitcode.Code(err) == exitcode.Invalid {
		v.Differs = fmt.Sprintf("the environment registry at %s cannot be read: %v", gitrepo.Short(rev), err)
		return v, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the environment registry at %s: %w", rev, err)
	}
	opts := checkfile.Options{Namespace: namespace, ParseQuery: s.ParseQuery}
	if reg.Configured() {
		app, env, _, ok := reg.Locate(dir)
		if !ok {
			v.Differs = fmt.Sprintf("spec.sourcePath %s is no overlay of the environment registry at %s", dir, gitrepo.Short(rev))
			return v, nil
		}
		e, _ := reg.Get(env)
		if len(e.Namespaces) > 0 && !e.BindsNamespace(app, namespace) {
			v.Differs = fmt.Sprintf("the Acceptance's namespace %q is not one the registry at %s binds to app %s in environment %s (namespaces %q)",
				namespace, gitrepo.Short(rev), app, env, e.Namespaces)
			return v, nil
		}
		opts.Environment, opts.App = e, app
	}
	parse := func(file string, data []byte) (*v1alpha1.RuntimeChecks, error) {
		return checkfile.Parse(file, data, opts)
	}
	committed, found, err := gitops.Read(ctx, s.Repo, rev, v.File, parse)
	switch {
	case exitcode.Code(err) == exitcode.Invalid || exitcode.Code(err) == exitcode.Refused:
		v.Differs = fmt.Sprintf("the committed checks at %s are refused for this Acceptance: %v", gitrepo.Short(rev), err)
		return v, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s at %s: %w", v.File, rev, err)
	case !found:
		committed = nil
	}
	same, err := equal(live, committed)
	if err != nil {
		return nil, err
	}
	if !same {
		what := "differ from those"
		if committed == nil {
			what = "are not declared: no file"
		}
		v.Differs = fmt.Sprintf("the live Acceptance's checks %s committed in %s at %s", what, v.File, gitrepo.Short(rev))
		return v, nil
	}
	if committed != nil {
		for _, c := range committed.Checks {
			if c.HTTP != nil && c.HTTP.Service.Namespace != "" && c.HTTP.Service.Namespace != namespace {
				v.ProbeNamespaces = append(v.ProbeNamespaces, c.HTTP.Service.Namespace)
			}
		}
	}
	return v, nil
}

// equal compares two declarations by their JSON form (the form the render
// writes into the Acceptance); nil and no checks are the same.
func equal(a, b *v1alpha1.RuntimeChecks) (bool, error) {
	if a == nil || b == nil {
		return (a == nil || len(a.Checks) == 0) && (b == nil || len(b.Checks) == 0), nil
	}
	ja, err := json.Marshal(a)
	if err != nil {
		return false, fmt.Errorf("encoding the live checks: %w", err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		return false, fmt.Errorf("encoding the committed checks: %w", err)
	}
	return bytes.Equal(ja, jb), nil
}
