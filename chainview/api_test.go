package chainview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
)

// TestAPIApplication: the JSON API answers, for an app in an environment,
// the cell as the grid judges it in the status panel's words (an ACCEPTED
// chain proven, a HALTED one with its reason, a promotion waiting on its
// attempt branch for 1 of 2 approvals), the nine arrows with their
// evidence, and the app in every environment; the app and environment come
// from the query (the Application's labels) or Argo CD's
// Argocd-Application-Name header read as <app>-<environment>.
func TestAPIApplication(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	branch := f.AwaitApprovals()
	srv := httptest.NewServer(&Handler{Repo: f.Repo})
	defer srv.Close()
	for _, tc := range []struct {
		name, query, header string
		app, env            string
		status, tone        string
		verdict             Status
		proven              int
	}{
		{"accepted, by labels", "?app=checkout&env=production", "", "checkout", "production", "sha256:4b7e2a91c3d5 accepted", ToneProven, Proven, 9},
		{"accepted, by the proxy's header", "", "argocd:checkout-production", "checkout", "production", "sha256:4b7e2a91c3d5 accepted", ToneProven,
			Proven, 9},
		{"halted", "?app=web&env=production", "argocd:something-else", "web", "production",
			"halted: Pod web-5f7c9d8b6-x2k4p (container api) runs imageID", ToneBroken, Broken, 8},
		{"awaiting approvals in flight", "", "apps:api-production", "api", "production", "awaiting 1 of 2 approvals (in flight)", TonePending, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", srv.URL+APIApplication+tc.query, nil)
			must(t, err)
			if tc.header != "" {
				req.Header.Set(HeaderApplication, tc.header)
				req.Header.Set(HeaderProject, "default")
			}
			var st AppStatus
			code := getJSON(t, req, &st)
			if code != 200 {
				t.Fatalf("%d", code)
			}
			if st.App != tc.app || st.Environment != tc.env || !strings.HasPrefix(st.Status, tc.status) || st.Tone != tc.tone {
				t.Errorf("%s/%s %q %s, want %s/%s %q... %s", st.App, st.Environment, st.Status, st.Tone, tc.app, tc.env, tc.status, tc.tone)
			}
			if tc.header != "" && (st.Application != tc.header || st.Project != "default") {
				t.Errorf("Argo CD's headers not echoed: %q %q", st.Application, st.Project)
			}
			if len(st.Pipeline) != 3 || st.Pipeline[2].Environment != "production" {
				t.Errorf("pipeline: %+v", st.Pipeline)
			}
			if tc.verdict == "" {
				if st.Chain != nil || len(st.InFlight) != 1 || st.InFlight[0].Branch != branch || st.InFlight[0].State != "VERIFIED" {
					t.Errorf("in flight: chain %v, flights %+v", st.Chain, st.InFlight)
				}
				if st.Pipeline[2].Status != "in flight: VERIFIED, waits on approvals: 1 of 2" {
					t.Errorf("pipeline's production: %q", st.Pipeline[2].Status)
				}
				return
			}
			if st.Chain == nil || st.Chain.Verdict != tc.verdict || st.Chain.Proven != tc.proven || len(st.Chain.Arrows) != 9 {
				t.Fatalf("chain: %+v", st.Chain)
			}
			if a := st.Chain.Arrows[4]; a.Status != Proven || len(a.Pods) == 0 || len(a.Facts) == 0 {
				t.Errorf("arrow 5 carries no evidence: %+v", a)
			}
			if len(st.Accepted) == 0 && tc.app == "checkout" {
				t.Error("no accepted history")
			}
		})
	}
}

// TestAPIRefuses: what the API does not answer, and that it never echoes
// the request; with a token, nothing without it.
func TestAPIRefuses(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	open := httptest.NewServer(&Handler{Repo: f.Repo})
	defer open.Close()
	locked := httptest.NewServer(&Handler{Repo: f.Repo, APIToken: []byte("s3cret-api-token")})
	defer locked.Close()
	const hostile = "<script>x</script>"
	for _, tc := range []struct {
		name, method, url string
		header            map[string]string
		code              int
	}{
		{"no app", "GET", open.URL + APIApplication, nil, 400},
		{"a name that is not one", "GET", open.URL + APIApplication + "?app=" + hostile + "&env=production", nil, 400},
		{"half a query", "GET", open.URL + APIApplication + "?app=checkout", nil, 400},
		{"an unknown environment", "GET", open.URL + APIApplication + "?app=checkout&env=moon", nil, 404},
		{"an unknown app", "GET", open.URL + APIApplication + "?app=nope&env=production", nil, 404},
		{"a header without a namespace", "GET", open.URL + APIApplication, map[string]string{HeaderApplication: "checkout-production"}, 400},
		{"a header naming no app", "GET", open.URL + APIApplication, map[string]string{HeaderApplication: "argocd:guestbook"}, 404},
		{"a hostile header", "GET", open.URL + APIApplication, map[string]string{HeaderApplication: "argocd:" + hostile}, 400},
		{"another endpoint", "GET", open.URL + APIPrefix + "grid", nil, 404},
		{"a write", "POST", open.URL + APIApplication + "?app=checkout&env=production", nil, 405},
		{"no token", "GET", locked.URL + APIApplication + "?app=checkout&env=production", nil, 401},
		{"a wrong token", "GET", locked.URL + APIApplication + "?app=checkout&env=production", map[string]string{"Authorization": "Bearer s3cret"}, 401},
		{"a basic credential", "GET", locked.URL + APIApplication + "?app=checkout&env=production",
			map[string]string{"Authorization": "Basic s3cret-api-token"}, 401},
		{"the token", "GET", locked.URL + APIApplication + "?app=checkout&env=production",
			map[string]string{"Authorization": "Bearer s3cret-api-token"}, 200},
		{"the pages need no token", "GET", locked.URL + "/", nil, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, tc.url, nil)
			must(t, err)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			must(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("%d, want %d: %s", resp.StatusCode, tc.code, body)
			}
			if strings.Contains(string(body), "script") || strings.Contains(string(body), "s3cret") {
				t.Errorf("the answer echoes the request: %s", body)
			}
			if tc.code == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if strings.HasPrefix(tc.url, open.URL+APIPrefix) && tc.code != 405 {
				var v map[string]any
				if err := json.Unmarshal(body, &v); err != nil || resp.Header.Get("Content-Type") != "application/json" {
					t.Errorf("not JSON (%s): %v: %s", resp.Header.Get("Content-Type"), err, body)
				}
			}
		})
	}
}

func getJSON(t *testing.T, req *http.Request, v any) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
	} else {
		t.Logf("%d: %s", resp.StatusCode, body)
	}
	return resp.StatusCode
}

// TestAPINarrowedToTheApplication: with the live Applications to read
// (serve with a cluster), a request through Argo CD's proxy extension is
// answered about the Application argocd-server checked its user may read,
// and only it. A user who may read the guestbook's Application, asking
// with its header for web in production, is refused, as is a header naming
// an Application of another project or none; the app and environment come
// from the live Application's labels (or annotations, or its name), not
// from what the request says. A request without the header (the token
// holder itself) asks what it likes. (The lookup is a map here; serve's
// reads the Application through the Kubernetes API: serve TestUIApplications.)
func TestAPINarrowedToTheApplication(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	f.AwaitApprovals()
	apps := map[string]*ArgoApplication{
		"argocd/checkout-prod":  {Project: "shop", Labels: map[string]string{"throughline.dev/app": "checkout", "throughline.dev/environment": "production"}},
		"argocd/payments":       {Project: "shop", Annotations: map[string]string{"throughline.dev/app": "api", "throughline.dev/environment": "production"}},
		"argocd/web-production": {Project: "web"},
		"argocd/guestbook":      {Project: "default"},
	}
	lookup := func(_ context.Context, ns, name string) (*ArgoApplication, error) {
		if name == "broken" {
			return nil, errors.New("the API server is down")
		}
		a, ok := apps[ns+"/"+name]
		if !ok {
			return nil, fmt.Errorf("%s/%s: %w", ns, name, ErrNoApplication)
		}
		return a, nil
	}
	srv := httptest.NewServer(&Handler{Repo: f.Repo, Applications: lookup})
	defer srv.Close()
	for _, tc := range []struct {
		name, query, header, project string
		code                         int
		app, env                     string
	}{
		{"by its labels", "", "argocd:checkout-prod", "shop", 200, "checkout", "production"},
		{"by its labels, the query agreeing", "?app=checkout&env=production", "argocd:checkout-prod", "shop", 200, "checkout", "production"},
		{"by its annotations", "", "argocd:payments", "shop", 200, "api", "production"},
		{"by its name", "", "argocd:web-production", "web", 200, "web", "production"},
		{"another app by the query", "?app=web&env=production", "argocd:checkout-prod", "shop", 403, "", ""},
		{"another environment by the query", "?app=checkout&env=staging", "argocd:checkout-prod", "shop", 403, "", ""},
		{"an Application throughline does not promote, asking for web", "?app=web&env=production", "argocd:guestbook", "default", 404, "", ""},
		{"another project than the header's", "", "argocd:checkout-prod", "default", 403, "", ""},
		{"no such Application", "?app=web&env=production", "argocd:nope", "shop", 404, "", ""},
		{"an Application that is not a name", "", "argocd:Web_Prod", "shop", 400, "", ""},
		{"the lookup fails", "", "argocd:broken", "shop", 503, "", ""},
		{"no header: the token holder asks", "?app=web&env=production", "", "", 200, "web", "production"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", srv.URL+APIApplication+tc.query, nil)
			must(t, err)
			if tc.header != "" {
				req.Header.Set(HeaderApplication, tc.header)
				req.Header.Set(HeaderProject, tc.project)
			}
			resp, err := http.DefaultClient.Do(req)
			must(t, err)
			body, err := io.ReadAll(resp.Body)
			must(t, err)
			_ = resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("%d %s, want %d", resp.StatusCode, body, tc.code)
			}
			if tc.code == 503 && !strings.Contains(string(body), "cannot read the Application from the cluster") {
				t.Errorf("a failed lookup answers %s, want what failed", body)
			}
			if tc.code != 200 {
				for _, leak := range []string{"sha256:", "web-5f7c9d8b6", "pipeline", "the API server is down"} {
					if strings.Contains(string(body), leak) {
						t.Errorf("a refusal says %q: %s", leak, body)
					}
				}
				return
			}
			var st AppStatus
			must(t, json.Unmarshal(body, &st))
			if st.App != tc.app || st.Environment != tc.env {
				t.Errorf("answered about %s in %s, want %s in %s", st.App, st.Environment, tc.app, tc.env)
			}
		})
	}
}
