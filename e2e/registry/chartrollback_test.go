//go:build e2e

package registry

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	helmregistry "helm.sh/helm/v4/pkg/registry"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/internal/chartfixture"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/promotion"
)

// TestChartRollbackAgainstDistribution: the rollback's chart check
// (gate.ChartsServed, which promote.Rollback runs before proposing)
// against the real registry with basic auth and charts pushed with Helm's
// SDK: the accepted package still served passes; once the version is
// re-pushed with another package the rollback is refused naming both
// digests; a version never pushed is refused as gone.
func TestChartRollbackAgainstDistribution(t *testing.T) {
	const user, password = "ci", "s3cr3t-pw"
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{Username: user, Password: password})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dockerConfig := t.TempDir()
	cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg.Host, base64.StdEncoding.EncodeToString([]byte(user+":"+password)))
	must(t, os.WriteFile(filepath.Join(dockerConfig, "config.json"), []byte(cfg), 0o600))
	t.Setenv("DOCKER_CONFIG", dockerConfig)
	auth := helmregistry.ClientOptBasicAuth(user, password)
	repo := "oci://" + reg.Host + "/charts"

	accepted := chartfixture.Push(t, reg.Host, "charts", chartfixture.SchemaTgz(t, "web", "1.0.0", "accepted"), auth)
	src := chartsource.ForRender{Fetcher: chartsource.NewFetcher(chartsource.Options{CacheDir: t.TempDir()})}
	charts := []promotion.Chart{{Name: "web", Version: "1.0.0", Digest: accepted, Source: repo}}
	if err := gate.ChartsServed(ctx, src, charts); err != nil {
		t.Fatalf("the accepted chart, still served: %v", err)
	}
	repushed := chartfixture.Push(t, reg.Host, "charts", chartfixture.SchemaTgz(t, "web", "1.0.0", "repushed"), auth)
	err := gate.ChartsServed(ctx, src, charts)
	var re *exitcode.Refusal
	if !errors.As(err, &re) || re.Rule != gate.RuleChartVersionMoved || !strings.Contains(err.Error(), accepted) || !strings.Contains(err.Error(), repushed) {
		t.Fatalf("rollback to chart 1.0.0 re-pushed (%s -> %s): %v", accepted, repushed, err)
	}
	gone := []promotion.Chart{{Name: "web", Version: "0.9.0", Digest: accepted, Source: repo}}
	if err := gate.ChartsServed(ctx, src, gone); !errors.As(err, &re) || re.Rule != gate.RuleChartGone {
		t.Fatalf("rollback to a chart version the registry never served: %v", err)
	}
}
