package promote

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
)

// pinControllers moves the pin of env's Argo CD Applications that deploy
// app's overlay to commit, when env's binding is pinned (the registry at
// tip): every source of such an Application whose path is the overlay gets
// targetRevision commit. It returns the files it changed, to be written in
// the commit that records commit as desired (nil when env is not pinned).
// Comments and the other documents of a file are kept.
func pinControllers(ctx context.Context, r *gitops.Repo, reg *environment.Registry, tip, app, env, commit string) (map[string][]byte, error) {
	e, ok := reg.Get(env)
	if !ok || e.Binding == nil || !e.Binding.Pinned {
		return nil, nil
	}
	files, err := r.ListTree(ctx, tip, ".")
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, f := range files {
		if !e.OwnsController(f) || (path.Ext(f) != ".yaml" && path.Ext(f) != ".yml") {
			continue
		}
		data, err := r.ReadFile(ctx, tip, f)
		if err != nil {
			return nil, fmt.Errorf("reading controller file %s at %s: %w", f, tip, err)
		}
		if !bytes.Contains(data, []byte("argoproj.io")) {
			continue
		}
		moved, err := pinFile(r, reg, f, data, app, env, commit)
		if err != nil {
			return nil, err
		}
		if moved != nil {
			out[f] = moved
		}
	}
	if len(out) == 0 {
		return nil, exitcode.Refuse(RulePromotion, "environment %s is pinned, but no Application in its controller files deploys app %s's "+
			"overlay: nothing to move to %s", env, app, commit)
	}
	return out, nil
}

// pinFile is pinControllers for one file: its new content, nil when none
// of its Applications deploys app's overlay of env.
func pinFile(r *gitops.Repo, reg *environment.Registry, file string, data []byte, app, env, commit string) ([]byte, error) {
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(data), PreserveSeqIndent: true}).Read()
	if err != nil {
		return nil, exitcode.InvalidFile(file, err)
	}
	moved := false
	for _, n := range nodes {
		if !strings.HasPrefix(n.GetApiVersion(), "argoproj.io/") || n.GetKind() != "Application" {
			continue
		}
		var sources []*yaml.RNode
		if s, err := n.Pipe(yaml.Lookup("spec", "source")); err == nil && s != nil {
			sources = append(sources, s)
		}
		if list, err := n.Pipe(yaml.Lookup("spec", "sources")); err == nil && list != nil {
			items, err := list.Elements()
			if err != nil {
				return nil, exitcode.InvalidFile(file, fmt.Errorf("%s spec.sources: %w", n.GetName(), err))
			}
			sources = append(sources, items...)
		}
		for _, s := range sources {
			p, err := s.GetString("path")
			if err != nil {
				continue
			}
			p = path.Clean(strings.TrimPrefix(strings.TrimSpace(p), "./"))
			if rel, ok := r.Rel(p); ok && r.Prefix != "" {
				p = path.Clean(rel)
			}
			if a, e, _, ok := reg.Locate(p); !ok || a != app || e != env {
				continue
			}
			if err := s.PipeE(yaml.SetField("targetRevision", yaml.NewStringRNode(commit))); err != nil {
				return nil, fmt.Errorf("pinning %s %s to %s: %w", file, n.GetName(), commit, err)
			}
			moved = true
		}
	}
	if !moved {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := (kio.ByteWriter{Writer: &buf}).Write(nodes); err != nil {
		return nil, fmt.Errorf("writing %s: %w", file, err)
	}
	return buf.Bytes(), nil
}
