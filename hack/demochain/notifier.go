package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/health"
	"github.com/throughline-dev/throughline/notifier"
)

// notifierToken is the bearer token the replayed Argo CD deliveries carry
// (the notifier's ArgoCDToken; a demo value, the server lives in this
// process only).
const notifierToken = "throughline-demo-argocd-token"

// replayer is the notifier as serve runs it (notifier.New's handler and
// notifier.Processor with its evidence.GitSink on a clone of the demo's
// origin, signing every evidence file with the demo's notifier key),
// behind an in-process HTTP server. What no cluster can give here is the
// live Acceptance: cluster plays it (the Acceptance the controller
// applied at the observed revision, its status saying every Pod runs
// the digests it declares).
type replayer struct {
	srv *httptest.Server
}

func newReplayer(ctx context.Context, d *demo) (*replayer, error) {
	dir, err := d.clone("notifier")
	if err != nil {
		return nil, err
	}
	repo, err := gitrepo.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	repo.Env = d.gitEnv()
	clusterDir, err := d.clone("cluster")
	if err != nil {
		return nil, err
	}
	proc := &notifier.Processor{
		Git:  &evidence.GitSink{Repo: repo, Branch: "main", Signer: d.keys.evidence},
		Live: &cluster{d: d, dir: clusterDir},
	}
	h, err := notifier.New(notifier.Config{ArgoCDToken: []byte(notifierToken), Rate: -1, ProcessTimeout: 2 * time.Minute}, proc, nil)
	if err != nil {
		return nil, err
	}
	return &replayer{srv: httptest.NewServer(h)}, nil
}

func (r *replayer) close() { r.srv.Close() }

// delivered is the notifier's answer to one delivery.
type delivered struct {
	Status      int    `json:"-"`
	Result      string `json:"result"`
	Commit      string `json:"commit"`
	PromotionID string `json:"promotionId"`
	Reason      string `json:"reason"`
}

// deliver replays the Argo CD notification the shipped template
// (deploy/argocd/argocd-notifications-cm.yaml) sends when env's
// Application checkout-<env> has synced rev and is Healthy.
func (r *replayer) deliver(ctx context.Context, env, rev string) (*delivered, error) {
	body, err := json.Marshal(notifier.ArgoCDPayload{
		Trigger: "on-deployed", Application: "checkout-" + env, Namespace: "argocd", App: "checkout", Environment: env,
		Revision: rev, SyncRevision: rev, SyncStatus: "Synced", Phase: "Succeeded", Health: "Healthy",
		Message: "successfully synced (all tasks run)",
	})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.srv.URL+"/v1/argocd", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+notifierToken)
	resp, err := r.srv.Client().Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	out := &delivered{Status: resp.StatusCode}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return nil, fmt.Errorf("the notifier's answer (%d): %w", resp.StatusCode, err)
	}
	return out, nil
}

// cluster is the notifier.Acceptances of the demo: the Acceptance Argo
// CD's plugin renders at the revision the delivery reports (the real
// render, by the CLI, in a clone checked out at that revision), with the
// status throughline serve writes once every Pod of its workloads runs
// the declared digests and its runtime checks passed for their soak. The
// status is played: there is no cluster.
type cluster struct {
	d   *demo
	dir string
}

func (c *cluster) Get(ctx context.Context, ev notifier.Event) (*notifier.Live, error) {
	if _, err := c.d.git(c.dir, "fetch", "-q", "origin"); err != nil {
		return nil, err
	}
	if _, err := c.d.git(c.dir, "checkout", "-q", "--detach", ev.Revision); err != nil {
		return nil, err
	}
	out, err := c.d.tl(c.dir, 0, "render", "--log-level", "warn", "--root", c.dir, "-o", "json",
		path.Join(c.dir, "apps", ev.App, "overlays", ev.Environment))
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, err
	}
	for _, o := range list.Items {
		if o["kind"] != "Acceptance" {
			continue
		}
		u := &unstructured.Unstructured{Object: o}
		u.SetGeneration(1)
		st, err := running(u, time.Now().UTC())
		if err != nil {
			return nil, err
		}
		if _, err := health.SetStatus(u, st); err != nil {
			return nil, err
		}
		return notifier.LiveFrom(u)
	}
	return nil, fmt.Errorf("%s/%s at %s: %w", ev.App, ev.Environment, ev.Revision, notifier.ErrNoAcceptance)
}

// running is the status of the Acceptance u once every Pod runs what it
// declares (the imageID by digest, an exact match) and its runtime checks
// passed for the whole soak: Ready, reason Verified.
func running(u *unstructured.Unstructured, now time.Time) (v1alpha1.AcceptanceStatus, error) {
	spec, err := health.DecodeSpec(u)
	if err != nil {
		return v1alpha1.AcceptanceStatus{}, err
	}
	at := metav1.NewTime(now)
	st := v1alpha1.AcceptanceStatus{ObservedGeneration: u.GetGeneration(), RenderedHash: spec.RenderedHash, VerifiedAt: &at,
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonVerified,
			Message: "every Pod runs the declared digests", LastTransitionTime: at, ObservedGeneration: u.GetGeneration()}}}
	for _, w := range spec.Workloads {
		pods := 2
		if w.Kind == "CronJob" {
			pods = 1
		}
		ws := v1alpha1.WorkloadStatus{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, Outcome: v1alpha1.OutcomeVerified, Pods: pods}
		for _, c := range w.Containers {
			ref, err := name.NewDigest(c.Image)
			if err != nil {
				return v1alpha1.AcceptanceStatus{}, err
			}
			repo := ref.Context().String()
			ws.Containers = append(ws.Containers, v1alpha1.ContainerStatus{Name: c.Name, Digest: c.Digest, Outcome: v1alpha1.OutcomeVerified,
				Observed: []v1alpha1.ObservedImage{{ImageID: repo + "@" + c.Digest, Outcome: v1alpha1.OutcomeVerified, Match: v1alpha1.MatchExact,
					Pods: pods, Pod: w.Name + "-demo-" + strconv.Itoa(pods)}}})
		}
		st.Workloads = append(st.Workloads, ws)
	}
	if spec.Checks != nil {
		started := metav1.NewTime(now.Add(-spec.Checks.Soak.Duration - time.Minute))
		st.SoakStartedAt = &started
		for _, c := range spec.Checks.Checks {
			st.Checks = append(st.Checks, v1alpha1.CheckStatus{Name: c.Name, Verdict: v1alpha1.CheckPassed, Value: passing(c), LastEvaluated: at})
		}
	}
	return st, nil
}

// passing is a value that passes check c.
func passing(c v1alpha1.RuntimeCheck) string {
	switch {
	case c.Prometheus != nil:
		return "0"
	case c.HTTP != nil:
		return "200 in 12ms"
	}
	return "Job complete"
}
