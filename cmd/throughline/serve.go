package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/throughline-dev/throughline/serve"
)

const serveLong = `Run the verifier as a controller (controller-runtime). It watches Acceptance
objects (acceptances.throughline.dev) and the Pods, Deployments, ReplicaSets,
StatefulSets, DaemonSets and Jobs of the namespaces it is given, waits for each
named workload's rollout to complete (observedGeneration, updated replicas,
only Pods of the current revision), compares every container's imageID with
the declared digest and writes the Acceptance status: conditions Ready
(Verified, RolloutInProgress, ImageMismatch, Unverifiable, WorkloadNotFound,
Invalid), Reconciling and Stalled (kstatus), observedGeneration, the rendered
hash seen, verifiedAt, and per container the observed imageIDs with their match.

Once the images are verified, the runtime checks the Acceptance declares
(spec.checks: Prometheus queries through --prometheus-url, HTTP probes of
in-cluster Services, smoke-test Jobs) run on their intervals: Ready stays
Unknown (Soaking) until the soak passed with every check green, turns False
(CheckFailed) when a check fails its threshold, and False (DeadlineExceeded)
when spec.deadlines.rollout passed before the images verified. A check that
cannot be measured (Prometheus unreachable) is Unverifiable, never Verified.

Argo CD reads the status through the Lua health script of
deploy/argocd/argocd-cm-health.yaml, Flux through kstatus.
Registry lookups are cached by digest (memory and --registry-cache-dir).`

func newServeCommand(g *globals) *cobra.Command {
	var (
		kf kubeFlags
		rf registryFlags
	)
	o := serve.Options{Cluster: kf.config, Registry: rf.client}
	cmd := leaf(&cobra.Command{
		Use:   "serve",
		Short: "Run the Acceptance controller: verify live that the cluster runs the declared images",
		Long:  serveLong,
		Example: `  throughline serve --namespace shop --namespace payments
  throughline serve --metrics-bind-address :8080 --health-probe-bind-address :8081`,
	}, o.AddFlags, func(ctx context.Context, _ []string) error { return o.Run(ctx, g.log) })
	kf.add(cmd)
	rf.add(cmd)
	return cmd
}
