package gate

import (
	"slices"
	"strings"

	"github.com/throughline-dev/throughline/environment"
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
		if r := str(s.m, "targetRevision"); bd.TargetRevision != "" && r != bd.TargetRevision {
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
