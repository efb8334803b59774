//go:build e2e

package webview

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/chainview"
	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/forge"
	"github.com/throughline-dev/throughline/internal/testenv"
)

// The token argocd-server adds to every request it forwards to serve
// (extension.config's headers, from argocd-secret).
const extToken = "t0ken-from-argocd-secret"

// application is the part of a recorded Argo CD Application the stand-in
// argocd-server judges.
type application struct {
	Metadata struct {
		Name, Namespace string
	}
	Spec struct{ Project string }
}

// TestArgoCDExtension (issue 37): the built extension bundle
// (make argocd-extension) in Chromium, on a stand-in of Argo CD's page: the
// npm packages' React 19, ReactDOM and JSX runtime on window as Argo CD
// 3.5 provides them, window.extensionsAPI, and recorded Applications. Its
// data come from the chain view's JSON API (what serve --ui-bind-address
// serves, with --ui-api-token-file) over a real Git repository, through a
// stand-in of argocd-server's proxy extension (it forwards
// /extensions/throughline/ only for a known Application of the named
// project, drops the session cookie and adds the configured token). For an
// ACCEPTED, a HALTED and an awaiting-approvals Application (found by its
// labels, by its name, by its annotations), the status panel says where
// the promotion stands and the Application tab shows the chain; for one
// throughline does not promote, the panel says why it shows nothing. The
// Applications live in a kube-apiserver, where serve reads them: a request
// through one Application for another app is refused.
func TestArgoCDExtension(t *testing.T) {
	root := testenv.RepoRoot(t)
	dist := filepath.Join(root, "ui", "argocd-extension", "dist")
	bundle, err := os.ReadFile(filepath.Join(dist, "extension-throughline.js"))
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the extension is not built (make argocd-extension): %v", err)
		}
		t.Skipf("the extension is not built (make argocd-extension): %v", err)
	}
	// Argo CD 3.5 loads no bundle that carries its own React or JSX
	// runtime: the bundle takes both from the host.
	for _, banned := range []string{"__CLIENT_INTERNALS_DO_NOT_USE_OR_WARN_USERS_THEY_CANNOT_UPGRADE", "react.transitional.element", "useSyncExternalStore"} {
		if strings.Contains(string(bundle), banned) {
			t.Errorf("the bundle carries React's own code (%q): react and react/jsx-runtime must be external", banned)
		}
	}
	if !strings.Contains(string(bundle), "window.ReactJSXRuntime") || !strings.Contains(string(bundle), "window.React") {
		t.Error("the bundle does not take React and the JSX runtime from window.React and window.ReactJSXRuntime")
	}
	recorded, err := os.ReadFile(filepath.Join("testdata", "argocd-applications.json"))
	if err != nil {
		t.Fatal(err)
	}
	var apps []application
	if err := json.Unmarshal(recorded, &apps); err != nil {
		t.Fatal(err)
	}

	ctx := browser(t)
	f := chainfixture.New(t, example)
	branch := f.AwaitApprovals()
	// serve --forge github: the attempt's pull request, its title markup.
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/reviews") {
			_, _ = io.WriteString(w, `[{"user":{"login":"alice"},"state":"APPROVED"}]`)
			return
		}
		if r.URL.Query().Get("page") != "1" {
			_, _ = io.WriteString(w, `[]`)
			return
		}
		_, _ = io.WriteString(w, `[{"number":1347,"html_url":"https://github.example/platform/gitops-env/pull/1347",`+
			`"title":"<img src=x onerror=\"document.title='owned'\">promote api","head":{"ref":"`+branch+`","repo":{"full_name":"platform/gitops-env"}},`+
			`"base":{"ref":"main"}}]`)
	}))
	defer gh.Close()
	lister := chainview.ForgeLister(&forge.Client{Kind: forge.GitHub, BaseURL: gh.URL, Repo: "platform/gitops-env", Token: "tok-E2E", HTTP: gh.Client()})
	// The recorded Applications live in a kube-apiserver, as serve reads
	// them (--ui-api-narrow): the API answers a request through the proxy
	// about the Application it names only.
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{})
	kctx, kcancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer kcancel()
	if err := api.InstallCRDs(kctx, testenv.ArgoCDCRDs(t)); err != nil {
		t.Fatal(err)
	}
	var live []map[string]any
	if err := json.Unmarshal(recorded, &live); err != nil {
		t.Fatal(err)
	}
	for _, a := range live {
		delete(a, "status")
		u := &unstructured.Unstructured{Object: a}
		u.SetAPIVersion("argoproj.io/v1alpha1")
		u.SetKind("Application")
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: u.GetNamespace()}}
		if err := client.IgnoreAlreadyExists(api.Client.Create(kctx, ns)); err != nil {
			t.Fatal(err)
		}
		if err := api.Client.Create(kctx, u); err != nil {
			t.Fatalf("creating Application %s: %v", u.GetName(), err)
		}
	}
	applications := chainview.KubeApplications(func(ctx context.Context, ns, name string, u *unstructured.Unstructured) error {
		return api.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	})
	serveURL := serveHandler(t, &chainview.Handler{Repo: f.Repo, APIToken: []byte(extToken), Pulls: lister, Forge: "github",
		Applications: applications, Options: chainview.Options{CommitURL: "https://forge.example/gitops/commit/%s"}})
	var forwarded, refused atomic.Int32
	argocd := standInArgoCD(t, "", dist, serveURL, recorded, apps, &forwarded, &refused)

	for _, tc := range []struct {
		app, status, tone string
		tab               func(t *testing.T)
	}{
		{"checkout-production", "sha256:4b7e2a91c3d5 accepted", "proven", func(t *testing.T) {
			if n := count(t, ctx, "#tab li.throughline-arrow--proven"); n != 9 {
				t.Errorf("tab: %d proven arrows, want 9", n)
			}
			if s := text(t, ctx, "#tab #throughline-arrow-5"); !strings.Contains(s, "checkout-5f7c9d8b6-x2k4p") || !strings.Contains(s, "Verified Exact") {
				t.Errorf("tab: arrow 5 shows no Pod with its imageID match:\n%s", s)
			}
			if s := text(t, ctx, "#tab .throughline-approvals"); !strings.Contains(s, "alice@example.com") || !strings.Contains(s, "bob@example.com") {
				t.Errorf("tab: approvals %q", s)
			}
			if s := text(t, ctx, "#tab .throughline-pipeline"); !strings.Contains(s, "production: 1.5.0 sha256:4b7e2a91c3d5 accepted") ||
				// The fixture's staging record claims a dev acceptance its
				// history does not hold: not proven, as the grid says.
				!strings.Contains(s, "staging: 1.5.0 accepted, not proven: dev desired commit") {
				t.Errorf("tab: environments %q", s)
			}
			if s := text(t, ctx, "#tab .throughline-accepted"); !strings.Contains(s, "checkout-production-4b7e2a91c3d5-1") {
				t.Errorf("tab: accepted history %q", s)
			}
		}},
		{"web-production", "halted: Pod web-5f7c9d8b6-x2k4p (container api) runs imageID", "broken", func(t *testing.T) {
			if s := text(t, ctx, "#tab #throughline-arrow-9"); !strings.HasPrefix(s, "production runtime evidence broken HALTED (live)") {
				t.Errorf("tab: arrow 9 %q", s)
			}
			if n := count(t, ctx, "#tab li.throughline-arrow--proven"); n != 8 {
				t.Errorf("tab: %d proven arrows, want 8", n)
			}
		}},
		{"payments-api", "awaiting 1 of 2 approvals (in flight)", "pending", func(t *testing.T) {
			if s := text(t, ctx, "#tab .throughline-flights"); !strings.Contains(s, branch) || !strings.Contains(s, "VERIFIED 1.0.0 sha256:9d9d9d9d9d9d") {
				t.Errorf("tab: in flight %q", s)
			}
			// The attempt's pull request, linked, its title's markup as text.
			want := `PR #1347 (open, 1 approval on the forge): <img src=x onerror="document.title='owned'">promote api`
			if s := text(t, ctx, "#tab .throughline-flights .throughline-pull"); !strings.Contains(s, want) {
				t.Errorf("tab: pull request %q, want %q", s, want)
			}
			if href := attr(t, ctx, "#tab .throughline-pull a", "href"); href != "https://github.example/platform/gitops-env/pull/1347" {
				t.Errorf("tab: the request links to %q", href)
			}
			if n := count(t, ctx, "#tab img"); n != 0 {
				t.Errorf("tab: %d img elements: the title's markup was rendered", n)
			}
			if s := text(t, ctx, "#tab .throughline-nochain"); s != "No promotion record of api in production on main." {
				t.Errorf("tab: %q", s)
			}
		}},
	} {
		t.Run(tc.app, func(t *testing.T) {
			if err := chromedp.Do(ctx, chromedp.Navigate(argocd+"/applications/"+tc.app),
				chromedp.WaitVisible(chromedp.CSS("#panel .throughline-status__text")),
				chromedp.WaitVisible(chromedp.CSS("#tab .throughline-chain__status"))); err != nil {
				t.Fatalf("loading %s: %v (page: %s)", tc.app, err, text(t, ctx, "body"))
			}
			if s := text(t, ctx, "#panel .throughline-status__text"); !strings.HasPrefix(s, tc.status) {
				t.Errorf("status panel: %q, want %q...", s, tc.status)
			}
			if s := attr(t, ctx, "#panel .throughline-status", "data-tone"); s != tc.tone {
				t.Errorf("status panel tone %q, want %q", s, tc.tone)
			}
			tc.tab(t)
			if tc.app == "checkout-production" {
				screenshot(t, ctx, "argocd-extension.png", true)
				// The status panel's link opens the chain in Argo CD's
				// flyout, from the keyboard.
				if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS("#panel .throughline-status__more")), chromedp.KeyEvent("\r"),
					chromedp.WaitVisible(chromedp.CSS("#flyout .throughline-arrow"))); err != nil {
					t.Fatalf("flyout: %v", err)
				}
				if n := count(t, ctx, "#flyout li.throughline-arrow"); n != 9 {
					t.Errorf("flyout: %d arrows", n)
				}
			}
		})
	}
	// Argo CD under --rootpath /argo: the extension asks the proxy
	// extension under the page's base href, not at the host's root.
	t.Run("checkout-production under --rootpath /argo", func(t *testing.T) {
		var forwarded, refused atomic.Int32
		argocd := standInArgoCD(t, "/argo", dist, serveURL, recorded, apps, &forwarded, &refused)
		if err := chromedp.Do(ctx, chromedp.Navigate(argocd+"/argo/applications/checkout-production"),
			chromedp.WaitVisible(chromedp.CSS("#panel .throughline-status__text"))); err != nil {
			t.Fatalf("loading under /argo: %v (page: %s)", err, text(t, ctx, "body"))
		}
		if s := text(t, ctx, "#panel .throughline-status__text"); !strings.HasPrefix(s, "sha256:4b7e2a91c3d5 accepted") {
			t.Errorf("status panel under /argo: %q", s)
		}
		if forwarded.Load() == 0 || refused.Load() != 0 {
			t.Errorf("under /argo the proxy extension forwarded %d requests and refused %d", forwarded.Load(), refused.Load())
		}
	})
	// An Application throughline does not promote: the panel says why it
	// has nothing to show, in serve's words.
	t.Run("guestbook", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Navigate(argocd+"/applications/guestbook"),
			chromedp.WaitVisible(chromedp.CSS("#panel .throughline-status--error"))); err != nil {
			t.Fatalf("loading guestbook: %v", err)
		}
		if s := text(t, ctx, "#panel"); !strings.HasPrefix(s, "throughline: the Application's name is not <app>-<environment>") {
			t.Errorf("status panel: %q", s)
		}
	})
	if forwarded.Load() == 0 || refused.Load() != 0 {
		t.Errorf("the stand-in argocd-server forwarded %d requests and refused %d", forwarded.Load(), refused.Load())
	}
	// A user who may read checkout-production (argocd-server checked it)
	// asks, with its header, for web in production: serve answers about
	// the Application it names only.
	t.Run("another app through an allowed Application", func(t *testing.T) {
		for _, q := range []string{"?app=web&env=production", "?app=checkout&env=staging"} {
			req, err := http.NewRequest("GET", argocd+"/extensions/throughline/api/v1/application"+q, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.AddCookie(&http.Cookie{Name: "argocd.token", Value: "session"})
			req.Header.Set("Argocd-Application-Name", "argocd:checkout-production")
			req.Header.Set("Argocd-Project-Name", "production")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || strings.Contains(string(body), "sha256:") {
				t.Errorf("%s through checkout-production: %d %s, want 403 saying nothing of it", q, resp.StatusCode, body)
			}
		}
	})
}

// standInArgoCD serves the stand-in page at /applications/<name> and, as
// argocd-server's proxy extension does, /extensions/throughline/<path> to
// serve's /<path>: only for a recorded Application of the named project
// (Argocd-Application-Name "<namespace>:<name>", Argocd-Project-Name),
// without the browser's Cookie and Authorization, with the configured
// Authorization header.
func standInArgoCD(t *testing.T, root, dist, serveURL string, recorded []byte, apps []application, forwarded, refused *atomic.Int32) string {
	t.Helper()
	target, err := url.Parse(serveURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.URL.Path = strings.TrimPrefix(r.In.URL.Path, "/extensions/throughline")
		r.Out.URL.RawPath = ""
		r.Out.Header.Del("Cookie")
		r.Out.Header.Set("Authorization", "Bearer "+extToken)
		r.Out.Header.Set("Argocd-Username", "alice")
	}}
	page := template.Must(template.New("page").Parse(extensionPage))
	mux := http.NewServeMux()
	mux.HandleFunc("/extensions/throughline/", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie("argocd.token"); err != nil || c.Value != "session" {
			refused.Add(1)
			http.Error(w, "no session", http.StatusUnauthorized)
			return
		}
		for _, a := range apps {
			if r.Header.Get("Argocd-Application-Name") == a.Metadata.Namespace+":"+a.Metadata.Name && r.Header.Get("Argocd-Project-Name") == a.Spec.Project {
				forwarded.Add(1)
				proxy.ServeHTTP(w, r)
				return
			}
		}
		refused.Add(1)
		http.Error(w, "permission denied", http.StatusForbidden)
	})
	mux.HandleFunc("/applications/{name}", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "argocd.token", Value: "session", Path: "/", HttpOnly: true})
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := page.Execute(w, map[string]any{"Name": r.PathValue("name"), "Applications": template.JS(recorded),
			"Base": r.Context().Value(baseKey{})}); err != nil {
			t.Error(err)
		}
	})
	mux.Handle("/dist/", http.StripPrefix("/dist/", http.FileServer(http.Dir(dist))))
	// root "/argo" is Argo CD under --rootpath /argo (and --basehref
	// /argo/): every path, the proxy extension's too, is under /argo, and
	// nothing is served outside it.
	h := withBase(mux, "/")
	if root != "" {
		top := http.NewServeMux()
		top.Handle(root+"/", http.StripPrefix(root, withBase(mux, root+"/")))
		h = top
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// baseKey is the request context's key of the stand-in's base href.
type baseKey struct{}

// withBase serves h with base as the base href of its pages (Argo CD's
// index.html says <base href="{--basehref}">).
func withBase(h http.Handler, base string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), baseKey{}, base)))
	})
}

// extensionPage stands in for Argo CD's Application page: React on window,
// extensionsAPI recording what the extension registers, then the status
// panel item and the Application resource tab rendered for the recorded
// Application, and a flyout the status panel can open.
const extensionPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><base href="{{.Base}}"><title>{{.Name}} - Argo CD (stand-in)</title>
<style>
body { font-family: "Liberation Sans", sans-serif; margin: 0; background: #f4f4f4; color: #363c4a; }
header { background: #0dadea; color: #fff; padding: 10px 20px; font-size: 18px; }
.application-status-panel { display: flex; gap: 16px; background: #fff; padding: 12px 20px; border-bottom: 1px solid #dee6eb; }
.application-status-panel__item { min-width: 160px; }
.application-status-panel__item-title { font-size: 12px; color: #6d7f8b; text-transform: uppercase; }
.application-status-panel__item-value { font-size: 16px; }
.application-status-panel__item-name { font-size: 12px; color: #6d7f8b; }
#panel { max-width: 520px; }
main { display: flex; gap: 16px; padding: 16px 20px; }
.sliding-panel { background: #fff; flex: 1; box-shadow: 0 1px 3px rgba(0,0,0,.2); }
.tabs { border-bottom: 1px solid #dee6eb; padding: 8px 16px; font-size: 13px; }
.tabs span { margin-right: 18px; } .tabs .active { border-bottom: 2px solid #0dadea; font-weight: bold; }
#flyout:empty { display: none; }
#flyout { background: #fff; width: 420px; box-shadow: 0 1px 3px rgba(0,0,0,.2); font-size: 13px; }
a { color: #0b7bb0; cursor: pointer; }
</style></head>
<body>
<header>Argo CD (stand-in) / Applications / {{.Name}}</header>
<div class="application-status-panel">
  <div class="application-status-panel__item"><div class="application-status-panel__item-title">App health</div><div class="application-status-panel__item-value" id="health"></div></div>
  <div class="application-status-panel__item"><div class="application-status-panel__item-title">Sync status</div><div class="application-status-panel__item-value" id="sync"></div></div>
  <div class="application-status-panel__item"><div class="application-status-panel__item-title" id="panel-title"></div><div id="panel"></div></div>
</div>
<main>
  <div class="sliding-panel"><div class="tabs"><span>Summary</span><span>Parameters</span><span>Manifest</span><span class="active" id="tab-title"></span></div><div id="tab"></div></div>
  <div id="flyout"></div>
</main>
<script>
window.registered = {statusPanel: [], resource: [], appView: [], system: []};
window.extensionsAPI = {
  registerStatusPanelExtension: (component, title, id, flyout) => window.registered.statusPanel.push({component, title, id, flyout}),
  registerResourceExtension: (component, group, kind, title, opts) => window.registered.resource.push({component, group, kind, title, opts}),
  registerAppViewExtension: (component, title, icon) => window.registered.appView.push({component, title, icon}),
  registerSystemLevelExtension: (component, title, path, icon) => window.registered.system.push({component, title, path, icon}),
};
window.recorded = {{.Applications}};
</script>
<script src="dist/testhost.js"></script>
<script src="dist/extension-throughline.js"></script>
<script>
(() => {
  const app = window.recorded.find(a => a.metadata.name === {{.Name}});
  document.getElementById('health').textContent = app.status.health.status;
  document.getElementById('sync').textContent = app.status.sync.status;
  const h = window.React.createElement;
  const panel = window.registered.statusPanel.find(p => p.id === 'throughline');
  const tab = window.registered.resource.find(r => r.group === 'argoproj.io' && r.kind === 'Application');
  document.getElementById('panel-title').textContent = panel.title;
  document.getElementById('tab-title').textContent = tab.title;
  const flyout = window.ReactDOM.createRoot(document.getElementById('flyout'));
  const openFlyout = () => flyout.render(h(panel.flyout, {application: app, tree: {nodes: []}}));
  window.ReactDOM.createRoot(document.getElementById('panel')).render(h(panel.component, {application: app, openFlyout}));
  window.ReactDOM.createRoot(document.getElementById('tab')).render(h(tab.component, {application: app, resource: app, tree: {nodes: []}}));
})();
</script>
</body></html>`

// count is how many elements match sel.
func count(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
	if err != nil {
		t.Fatalf("counting %s: %v", sel, err)
	}
	return n
}

// attr is the attribute name of the element sel ("" without one).
func attr(t *testing.T, ctx context.Context, sel, name string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf("document.querySelector(%q).getAttribute(%q) || ''", sel, name)))
	if err != nil {
		t.Fatalf("reading %s of %s: %v", name, sel, err)
	}
	return v
}
