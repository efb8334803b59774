// Package health is throughline's live check: does the cluster run the
// artifact an Acceptance declares?
//
//   - [ParseImageID] and [MatchImageID] apply "The imageID match" of docs/concepts.md:
//     strip docker-pullable:// (or docker://) and the repository, then accept
//     the exact digest, the child of the declared index for the node's
//     platform (Node labels kubernetes.io/os and kubernetes.io/arch;
//     linux/arm64 is linux/arm64/v8), or a bare config digest equal to that
//     child's config. A digest that cannot be resolved is Unverifiable,
//     never Verified.
//   - [DeploymentRevision], [StatefulSetRevision], [DaemonSetRevision],
//     [JobRevision], [ArgoRolloutRevision] and [SelectPods] decide whether a
//     rollout is complete and which Pods are of the current revision
//     (pod-template-hash, controller-revision-hash,
//     rollouts-pod-template-hash); terminating Pods are ignored.
//   - [Verifier] runs both over an Acceptance and returns a [Report];
//     resolved digests are kept for its life, so a second pass asks the
//     registry nothing.
//   - [Reconciler] (and [NewManager], the wiring `throughline serve` uses)
//     writes the verdict into the Acceptance status: conditions Ready,
//     Reconciling and Stalled (kstatus-compatible, so Flux can wait on it),
//     observedGeneration, renderedHash, verifiedAt and the observed imageIDs.
//     Argo CD reads the same status through the Lua health script shipped
//     in deploy/argocd/argocd-cm-health.yaml.
//   - Once the images are verified, the Reconciler evaluates the runtime
//     checks of spec.checks (package runtimecheck) on their intervals: Ready
//     stays Unknown (Soaking) until the soak passed with every check green,
//     turns False (CheckFailed, Stalled) when a check reaches its failure
//     threshold and stays Unknown (Unverifiable) while a check cannot be
//     measured; spec.deadlines.rollout passed before the images verify is
//     DeadlineExceeded. The state (soakStartedAt, each check's last
//     evaluation) is in the status, so a restarted verifier resumes.
//
// The package does not log: the Reconciler reports each outcome to its
// OnResult hook.
package health
