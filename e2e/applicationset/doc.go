// Package applicationset checks that throughline check binds the
// Applications an ApplicationSet really generates: the same ApplicationSet
// is given to Argo CD's own ApplicationSet controller (v2.14, against a
// real kube-apiserver) and to gate.ApplicationSetApplications, and the
// Applications the controller creates must be those the gate expands and
// binds (name, namespace, project, sources, destination, every template
// parameter). The controller runs without a repo-server, so its Git
// generators cannot run here: the List generator is compared, with every
// kind of template value; the Git directory generator's parameters are
// table-tested in gate. Build tag e2e:
//
//	eval "$(hack/e2e-assets.sh)"
//	go test -race -tags e2e -count=1 -exec "$PWD/hack/netns-exec.sh" ./e2e/applicationset/
package applicationset
