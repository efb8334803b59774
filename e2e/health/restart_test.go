//go:build e2e

package health

import (
	"io"
	"net"
	urlpkg "net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/internal/testenv"
)

// flakyProxy forwards TCP to the API server; down() closes the listener and
// every open connection (the watches included) and refuses new ones, as a
// restarting kube-apiserver does; up() listens again on the same address.
type flakyProxy struct {
	t        *testing.T
	addr     string
	upstream string
	mu       sync.Mutex
	ln       net.Listener
	conns    map[net.Conn]bool
}

func newFlakyProxy(t *testing.T, upstream string) *flakyProxy {
	p := &flakyProxy{t: t, upstream: upstream, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.down)
	return p
}

func (p *flakyProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", p.upstream)
			if err != nil {
				_ = c.Close() // no upstream: drop the client
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[u] = true, true
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); _ = u.Close() }()
			go func() { _, _ = io.Copy(c, u); _ = c.Close() }()
		}
	}()
}

func (p *flakyProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close() // going down: whatever the peers did, the connections go
	}
	p.conns = map[net.Conn]bool{}
}

func (p *flakyProxy) up() {
	var ln net.Listener
	var err error
	for range 50 { // the port was ours a moment ago
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	must(p.t, err)
	p.serve(ln)
}

// TestAPIServerRestartDuringWatch: the controller's connections to the API
// server (its watches included) are cut and refused for a few seconds while
// a Pod changes; when the server answers again the controller re-lists,
// re-watches and reports the change.
//
// kube-apiserver itself is not restarted: envtest regenerates its CA and
// serving certificate on a restart, so no client configured before it could
// reconnect (a real cluster keeps them). The proxy gives the controller
// exactly what a restart looks like from its side: every connection
// dropped, new ones refused, then the same server and etcd again.
func TestAPIServerRestartDuringWatch(t *testing.T) {
	root := testenv.RepoRoot(t)
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{
		CRDPaths: []string{filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml")},
	})
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	ctx := testContext(t, 4*time.Minute)
	img := pushIndex(ctx, t, reg.Host, "demo/app")
	other := pushIndex(ctx, t, reg.Host, "demo/other")

	u, err := urlpkg.Parse(api.Config.Host)
	must(t, err)
	proxy := newFlakyProxy(t, u.Host)
	cfg := rest.CopyConfig(api.Config)
	cfg.Host = "https://" + proxy.addr
	testenv.StartVerifier(ctx, t, cfg)

	w := newWorld(ctx, t, api.Client, "restart")
	node := w.node("amd64", "linux", "amd64")
	app := ctr{name: "app", image: img.Image()}
	w.acceptance("web", "web", app)
	_, rs := w.deployment("web", 1, app)
	p := w.pod(rs, "web-1", node)
	w.kubelet(p, 0, map[string]string{"app": img.Repo + "@" + img.Index})
	w.waitReason("web", v1alpha1.ReasonVerified)

	proxy.down()
	w.kubelet(p, 1, map[string]string{"app": other.Repo + "@" + other.Index})
	time.Sleep(3 * time.Second)
	if _, _, c := w.ready("web"); c.Reason != v1alpha1.ReasonVerified {
		t.Fatalf("the controller saw the change while cut off: %s", c.Reason)
	}
	proxy.up()
	w.waitReason("web", v1alpha1.ReasonImageMismatch)
}
