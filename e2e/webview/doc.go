// Package webview is the end-to-end test of the chain view in a real
// browser: Debian's headless Chromium, driven over the DevTools protocol
// by chromedp, loads the pages the chain view serves (chainview.Handler
// behind the notifier's hardened http.Server, as throughline serve
// --ui-bind-address runs it) for a real Git repository made from the
// example environment (package chainfixture), reads the visible text of
// the grid and of each of the nine arrows, follows the links, and saves
// screenshots as test artifacts (go test -artifacts keeps them). The same
// pages written as static files (throughline report) are loaded from
// file://. TestArgoCDExtension loads the Argo CD extension's bundle (make
// argocd-extension) in a stand-in of Argo CD's page, its data from the
// chain view's JSON API through a stand-in of argocd-server's proxy
// extension. Without chromium the tests skip; with CI=true they fail. Build
// tag e2e:
//
//	go test -tags e2e -count=1 -exec "$PWD/hack/netns-exec.sh" ./e2e/webview/
//
// THROUGHLINE_DOCS_IMAGES=docs/images (an absolute path) also writes the
// screenshots of the grid and of one promotion page the docs show.
package webview
