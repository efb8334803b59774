package gate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/promotion"
)

// argo checks an Argo CD Application against its environment's binding:
// the repositories and revision its sources read, its project and its
// destination server.
func (b *binding) argo(spec map[string]any, sources []argoSource) {
	bd := b.owner.Binding
	if bd == nil {
		return
	}
	for _, s := range sources {
		if u := str(s.m, "repoURL"); u != "" && len(bd.RepoURLs) > 0 &&
			!slices.ContainsFunc(bd.RepoURLs, func(w string) bool { return environment.SameRepoURL(u, w) }) {
			b.refuseChange(s.field+".repoURL", strings.Join(bd.RepoURLs, ", "), u, "repoURL %q is not one of environment %s's repositories",
				u, b.owner.Name)
		}
		if bd.Pinned {
			b.pin(s)
		} else if r := str(s.m, "targetRevision"); bd.TargetRevision != "" && r != bd.TargetRevision {
			b.refuseChange(s.field+".targetRevision", bd.TargetRevision, r, "targetRevision %q is not environment %s's revision %q",
				r, b.owner.Name, bd.TargetRevision)
		}
	}
	if p := str(spec, "project"); bd.Project != "" && p != bd.Project {
		b.refuseChange("spec.project", bd.Project, p, "project %q is not environment %s's AppProject %q", p, b.owner.Name, bd.Project)
	}
	dest, _ := spec["destination"].(map[string]any)
	if srv := str(dest, "server"); srv != bd.Server {
		b.refuseChange("spec.destination.server", bd.Server, srv, "destination server %q is not environment %s's cluster %s (%q)",
			srv, b.owner.Name, b.owner.ClusterName(), bd.Server)
	}
}

// flux checks a Flux Kustomization against its environment's binding:
// its source, the service account it applies as and the cluster it
// applies to.
func (b *binding) flux(spec map[string]any) {
	bd := b.owner.Binding
	if bd == nil {
		return
	}
	if want := bd.FluxSource; want != nil {
		ref, _ := spec["sourceRef"].(map[string]any)
		ns := str(ref, "namespace")
		if ns == "" {
			meta, _ := b.ctl.obj["metadata"].(map[string]any)
			ns = str(meta, "namespace")
		}
		wantNS := want.Namespace
		if wantNS == "" {
			wantNS = ns
		}
		got := str(ref, "kind") + " " + ns + "/" + str(ref, "name")
		if str(ref, "kind") != want.Kind || str(ref, "name") != want.Name || ns != wantNS {
			b.refuseChange("spec.sourceRef", want.Kind+" "+wantNS+"/"+want.Name, got, "source %s is not environment %s's", got, b.owner.Name)
		}
	}
	if sa := str(spec, "serviceAccountName"); sa != bd.ServiceAccountName {
		b.refuseChange("spec.serviceAccountName", bd.ServiceAccountName, sa, "service account %q is not the one environment %s's "+
			"Kustomizations apply as (%q)", sa, b.owner.Name, bd.ServiceAccountName)
	}
	kc, _ := spec["kubeConfig"].(map[string]any)
	ref, _ := kc["secretRef"].(map[string]any)
	if s := str(ref, "name"); s != bd.KubeConfigSecret {
		b.refuseChange("spec.kubeConfig.secretRef.name", bd.KubeConfigSecret, s, "kubeConfig Secret %q is not environment %s's cluster %s (%q)",
			s, b.owner.Name, b.owner.ClusterName(), bd.KubeConfigSecret)
	}
}

// project checks an Argo CD AppProject in the owner's controller files: it
// is the owner's project (binding.project), and it reaches no further than
// the owner's registry entry: every source repository is one of the
// binding's repoURLs (no wildcard), every destination is the owner's
// cluster and one of its namespaces (a namespace pattern of the entry, or
// a namespace it matches). An AppProject is what Argo CD enforces when an
// Application is applied without throughline's check in the way.
func (b *binding) project(spec map[string]any) {
	meta, _ := b.ctl.obj["metadata"].(map[string]any)
	name := str(meta, "name")
	bd := b.owner.Binding
	if bd == nil || bd.Project == "" {
		b.refuse("metadata.name", "AppProject %q in environment %s's controller files, but its binding in %s names no project",
			name, b.owner.Name, b.c.reg.File())
		return
	}
	if name != bd.Project {
		b.refuseChange("metadata.name", bd.Project, name, "AppProject %q is not environment %s's project %q", name, b.owner.Name, bd.Project)
		return
	}
	repos, _ := spec["sourceRepos"].([]any)
	if len(repos) == 0 {
		b.refuse("spec.sourceRepos", "no sourceRepos: environment %s's project reads only its repositories (%s)", b.owner.Name,
			strings.Join(bd.RepoURLs, ", "))
	}
	for i, r := range repos {
		u, _ := r.(string)
		if len(bd.RepoURLs) > 0 && !slices.ContainsFunc(bd.RepoURLs, func(w string) bool { return environment.SameRepoURL(u, w) }) {
			b.refuseChange(fmt.Sprintf("spec.sourceRepos[%d]", i), strings.Join(bd.RepoURLs, ", "), u,
				"source repository %q is not one of environment %s's repositories", u, b.owner.Name)
		}
	}
	dests, _ := spec["destinations"].([]any)
	if len(dests) == 0 {
		b.refuse("spec.destinations", "no destinations: environment %s's project deploys only to its cluster and namespaces", b.owner.Name)
	}
	for i, d := range dests {
		m, _ := d.(map[string]any)
		field := fmt.Sprintf("spec.destinations[%d]", i)
		if srv := str(m, "server"); srv != "" && bd.Server != "" && srv != bd.Server || srv == "" && str(m, "name") != b.owner.ClusterName() {
			got := srv
			if got == "" {
				got = str(m, "name")
			}
			b.refuseChange(field, bd.Server, got, "destination cluster %q is not environment %s's cluster %s (%q)", got, b.owner.Name,
				b.owner.ClusterName(), bd.Server)
		}
		if ns := str(m, "namespace"); !slices.Contains(b.owner.Namespaces, ns) && (strings.ContainsAny(ns, "*?[") || !b.owner.HasNamespace(ns)) {
			b.refuseChange(field+".namespace", strings.Join(b.owner.Namespaces, ", "), ns,
				"destination namespace %q reaches beyond environment %s's namespaces", ns, b.owner.Name)
		}
	}
}

// strayProject refuses an AppProject outside every environment's
// controller files that defines an environment's project: a second
// definition of it escapes the review of the environment's own.
func (c *repoCheck) strayProject(ctl controller) []Finding {
	meta, _ := ctl.obj["metadata"].(map[string]any)
	name := str(meta, "name")
	var out []Finding
	for _, n := range c.reg.Names() {
		e, _ := c.reg.Get(n)
		if e.Binding != nil && e.Binding.Project == name {
			out = append(out, Finding{Rule: RuleController, Environment: n, File: ctl.file, Object: ctl.name, Field: "metadata.name",
				Reason: fmt.Sprintf("%s: %s: defines environment %s's AppProject %q, but no environment's controllers patterns in %s claim this file",
					ctl.file, ctl.name, n, name, c.reg.File())})
		}
	}
	return out
}

// pin checks the targetRevision of a source of an environment whose
// binding is pinned: a full commit id, and once the app it deploys has a
// record with a desired revision (promote reconcile wrote both in one
// commit, on the base branch), that revision as the merge base records
// it. A pull request that moves the pin moves the environment outside
// the promotion, and one that moves the record's desired revision with it
// moves both (the record is read where the change starts, never where it
// ends).
func (b *binding) pin(s argoSource) {
	r := str(s.m, "targetRevision")
	if !promotion.ValidRevision(r) {
		b.refuseChange(s.field+".targetRevision", "a commit of "+b.owner.Binding.TargetRevision, r,
			"targetRevision %q is not a full commit id: environment %s is pinned, moved only by promote reconcile", r, b.owner.Name)
		return
	}
	app, env, _, ok := b.c.reg.Locate(b.clean(str(s.m, "path")))
	if !ok || env != b.owner.Name {
		return
	}
	data, err := b.c.bt.OptionalFile(promotion.RecordPath(app, env))
	if err != nil || data == nil {
		return // no record yet (or none readable: the record gates judge it)
	}
	rec, err := promotion.Parse(promotion.RecordPath(app, env), data)
	if err != nil || rec.Reconciling == nil || rec.Reconciling.DesiredRevision == "" {
		return
	}
	if want := rec.Reconciling.DesiredRevision; r != want {
		b.refuseChange(s.field+".targetRevision", want, r, "targetRevision %q is not the desired revision of %s: environment %s is pinned, "+
			"moved only by promote reconcile", r, promotion.RecordPath(app, env), b.owner.Name)
	}
}
