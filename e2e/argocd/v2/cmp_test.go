// Package compat runs Argo CD's own CMP server (this module's Argo CD
// release) with the repository's plugin.yaml and calls it over its unix
// socket as argocd-repo-server does. The test body is ../harness; only the
// calls into Argo CD live here. v2/cmp_test.go and v3/cmp_test.go differ
// only in import paths (../run.sh checks that).
package compat

import (
	"context"
	"io"
	"net"
	"testing"

	grpc_retry "github.com/grpc-ecosystem/go-grpc-middleware/retry"
	log "github.com/sirupsen/logrus"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/argoproj/argo-cd/v2/cmd/argocd-cmp-server/commands"
	"github.com/argoproj/argo-cd/v2/cmpserver"
	"github.com/argoproj/argo-cd/v2/cmpserver/apiclient"
	"github.com/argoproj/argo-cd/v2/cmpserver/plugin"
	"github.com/argoproj/argo-cd/v2/util/app/discovery"
	"github.com/argoproj/argo-cd/v2/util/cmp"
	argoio "github.com/argoproj/argo-cd/v2/util/io"

	"github.com/throughline-dev/throughline/e2e/argocd/harness"
)

func TestMain(m *testing.M) {
	harness.Main(m, func() error { return commands.NewCommand().Execute() })
}

// TestCMPServerInProcess serves cmpserver.NewServer(...).CreateGRPC() on the
// socket, the way cmd/argocd-cmp-server does. The hostile-repository cases
// run once per release: in TestCMPServerProcess, or here under -short.
func TestCMPServerInProcess(t *testing.T) {
	if !testing.Verbose() {
		log.SetOutput(io.Discard)
	}
	harness.Run(t, driver{}, func(t testing.TB, configDir string) {
		cfg, err := plugin.ReadPluginConfig(configDir)
		harness.Must(t, err)
		srv, err := cmpserver.NewServer(plugin.CMPServerInitConstants{PluginConfig: *cfg})
		harness.Must(t, err)
		grpcServer, err := srv.CreateGRPC()
		harness.Must(t, err)
		lis, err := net.Listen("unix", cfg.Address())
		harness.Must(t, err)
		go func() { _ = grpcServer.Serve(lis) }()
		t.Cleanup(grpcServer.Stop)
	}, testing.Short())
}

// TestCMPServerProcess runs argocd-cmp-server (commands.NewCommand, in a
// re-executed test binary) as a separate process.
func TestCMPServerProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	harness.Run(t, driver{}, harness.StartProcess, true)
}

// TestCMPServerResident is TestCMPServerProcess with the sidecar's
// resident renderer beside argocd-cmp-server (harness.RunResident).
func TestCMPServerResident(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	harness.RunResident(t, driver{}, harness.StartProcess)
}

type driver struct{}

func (driver) Match(ctx context.Context, sock, appPath, repoPath string, env []string) (bool, error) {
	conn, client, err := apiclient.NewConfigManagementPluginClientSet(sock).NewConfigManagementPluginClient()
	if err != nil {
		return false, err
	}
	defer argoio.Close(conn)
	stream, err := client.MatchRepository(ctx, grpc_retry.Disable())
	if err != nil {
		return false, err
	}
	if err := cmp.SendRepoStream(stream.Context(), appPath, repoPath, stream, env, nil); err != nil {
		return false, err
	}
	resp, err := stream.CloseAndRecv()
	return resp.GetIsSupported() && resp.GetIsDiscoveryEnabled(), err
}

func (driver) Detect(ctx context.Context, appPath, repoPath, name string, env []string) error {
	conn, _, err := discovery.DetectConfigManagementPlugin(ctx, appPath, repoPath, name, env, nil)
	if err == nil {
		argoio.Close(conn)
	}
	return err
}

func (driver) Generate(ctx context.Context, appPath, repoPath, rootPath, name string, env, excludes []string) ([]string, error) {
	conn, client, err := discovery.DetectConfigManagementPlugin(ctx, appPath, repoPath, name, env, excludes)
	if err != nil {
		return nil, err
	}
	defer argoio.Close(conn)
	if _, err := client.CheckPluginConfiguration(ctx, &emptypb.Empty{}); err != nil {
		return nil, err
	}
	stream, err := client.GenerateManifest(ctx, grpc_retry.Disable())
	if err != nil {
		return nil, err
	}
	tarDone := make(chan bool, 1)
	if err := cmp.SendRepoStream(stream.Context(), appPath, rootPath, stream, env, excludes, cmp.WithTarDoneChan(tarDone)); err != nil {
		return nil, err
	}
	resp, err := stream.CloseAndRecv()
	return resp.GetManifests(), err
}

func (driver) Parameters(ctx context.Context, appPath, repoPath string, env []string) ([]string, error) {
	conn, client, err := discovery.DetectConfigManagementPlugin(ctx, appPath, repoPath, "", env, nil)
	if err != nil {
		return nil, err
	}
	defer argoio.Close(conn)
	stream, err := client.GetParametersAnnouncement(ctx, grpc_retry.Disable())
	if err != nil {
		return nil, err
	}
	if err := cmp.SendRepoStream(stream.Context(), appPath, repoPath, stream, env, nil); err != nil {
		return nil, err
	}
	resp, err := stream.CloseAndRecv()
	var names []string
	for _, p := range resp.GetParameterAnnouncements() {
		names = append(names, p.Name)
	}
	return names, err
}

// BenchmarkCMPServerMonorepo is harness.Bench through argocd-cmp-server
// processes (make bench-cmp-server; run with -benchtime 1x).
func BenchmarkCMPServerMonorepo(b *testing.B) {
	harness.Bench(b, driver{}, harness.StartProcess)
}
