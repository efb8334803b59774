package chainview

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/chainview/chainfixture"
)

func acceptance(app, env string, containers ...v1alpha1.ContainerStatus) v1alpha1.Acceptance {
	return v1alpha1.Acceptance{ObjectMeta: metav1.ObjectMeta{Namespace: app + "-" + env, Name: app},
		Spec:   v1alpha1.AcceptanceSpec{App: app, Environment: env},
		Status: v1alpha1.AcceptanceStatus{Workloads: []v1alpha1.WorkloadStatus{{Kind: "Deployment", Name: app, Containers: containers}}}}
}

// TestLiveFromAcceptances: what runs, as the verifier's status says.
func TestLiveFromAcceptances(t *testing.T) {
	t.Parallel()
	live := LiveFromAcceptances([]v1alpha1.Acceptance{
		acceptance("checkout", "production", v1alpha1.ContainerStatus{Name: "api", Digest: chainfixture.Checkout, Outcome: v1alpha1.OutcomeVerified,
			Observed: []v1alpha1.ObservedImage{{ImageID: "ghcr.io/x@sha256:" + strings.Repeat("f", 64), Match: v1alpha1.MatchIndexChild}}}),
		acceptance("web", "production", v1alpha1.ContainerStatus{Name: "api", Digest: chainfixture.Web, Outcome: v1alpha1.OutcomeMismatch,
			Observed: []v1alpha1.ObservedImage{{ImageID: "docker-pullable://ghcr.io/throughline-dev/web@" + chainfixture.WebOld}}}),
		{Spec: v1alpha1.AcceptanceSpec{App: "cart"}}, // no environment: says nothing
	})
	if got := live[Key("checkout", "production")].Digests; len(got) != 1 || got[0] != chainfixture.Checkout {
		t.Errorf("checkout: %v (a verified index child runs the declared digest)", got)
	}
	if got := live[Key("web", "production")]; len(got.Digests) != 1 || got.Digests[0] != chainfixture.WebOld || got.Source != "web-production/web" {
		t.Errorf("web: %+v", got)
	}
	if len(live) != 2 {
		t.Errorf("%d entries: %v", len(live), live)
	}
}

// TestHandlerLive: the served grid shows drift from the live Acceptances,
// asked again at every refresh, and none when the cluster cannot be read.
func TestHandlerLive(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	var fail bool
	h := &Handler{Repo: f.Repo, TTL: time.Nanosecond, Live: func(context.Context) (map[string]Live, error) {
		if fail {
			return nil, errors.New("the API server is down")
		}
		return map[string]Live{Key("web", "production"): {Digests: []string{chainfixture.WebOld}},
			Key("checkout", "production"): {Digests: []string{chainfixture.Checkout}}}, nil
	}}
	var logged []error
	h.Log = func(err error) { logged = append(logged, err) }
	get := func() string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		body, _ := io.ReadAll(rec.Body)
		return string(body)
	}
	page := get()
	for _, want := range []string{"drift: runs " + chainfixture.WebOld + ", Git declares " + chainfixture.Web, "runs what Git declares"} {
		if !strings.Contains(page, want) {
			t.Errorf("grid: no %q", want)
		}
	}
	fail = true
	if page := get(); strings.Contains(page, "drift:") || len(logged) != 1 {
		t.Errorf("with the cluster down: drift shown, or %d errors logged", len(logged))
	}
}
