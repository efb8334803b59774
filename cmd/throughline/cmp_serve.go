package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/cmp"
	"github.com/throughline-dev/throughline/cmp/resident"
	"github.com/throughline-dev/throughline/cmp/resident/residentmetrics"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/cli"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/tracing"
)

// DefaultResidentMetricsAddr is where the resident renderer serves
// /metrics unless --metrics-addr says otherwise: loopback only.
const DefaultResidentMetricsAddr = "127.0.0.1:9465"

// cmpServe are the flags of cmp serve (and of cmp sidecar, which starts
// cmp serve with them).
type cmpServe struct {
	dir         string
	metricsAddr string
	cacheDir    string
	cacheBytes  int64
	maxFileSize int64
	maxRenders  int
}

func (o *cmpServe) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.dir, "dir", os.Getenv(cli.EnvResidentDir),
		"directory of the socket: created 0700 when missing; refused unless owned by the current user and closed to group and others (env "+
			cli.EnvResidentDir+")")
	f.StringVar(&o.metricsAddr, "metrics-addr", DefaultResidentMetricsAddr, `address of /metrics ("" for none)`)
	f.StringVar(&o.cacheDir, "cache-dir", cli.DefaultCacheDir(), "render cache directory (env "+cli.EnvCacheDir+")")
	f.Int64Var(&o.cacheBytes, "cache-max-bytes", cmp.DefaultCacheMaxBytes, "bound of the render cache on disk and in memory")
	f.Int64Var(&o.maxFileSize, "max-file-size", render.DefaultMaxFileSize, "refuse any input file larger than this many bytes")
	f.IntVar(&o.maxRenders, "max-renders", resident.DefaultMaxRenders,
		"renders (cache misses, each in its own render child) run at once; the others wait their turn, hits never wait")
}

// args are the flags as cmp serve's command line (for cmp sidecar).
func (o *cmpServe) args() []string {
	return []string{"--dir", o.dir, "--metrics-addr", o.metricsAddr, "--cache-dir", o.cacheDir,
		"--cache-max-bytes", strconv.FormatInt(o.cacheBytes, 10), "--max-file-size", strconv.FormatInt(o.maxFileSize, 10),
		"--max-renders", strconv.Itoa(o.maxRenders)}
}

const cmpServeLong = `Runs the resident renderer of the Argo CD sidecar: a long-lived process that
keeps the render cache in memory (an entry is verified once, when it is
loaded from disk) and serves renders on a unix socket in --dir. cmp generate
(throughline-cmp generate) with ` + cli.EnvResidentDir + ` set hands it the
Application's environment and the unpacked directory and prints what it
answers; when it is absent, unhealthy, too slow or dies mid-render, generate
renders in-process and says so on stderr. Renders go through the confined
render child, confined to the repository the request names, as in-process.

At most --max-renders renders (cache misses) run at once, each in its own
render child; the others wait their turn (hits never wait). Serves
Prometheus metrics on --metrics-addr/metrics. On SIGTERM it stops
accepting, abandons the renders in flight (their clients render in-process)
and removes the socket.`

func newCMPServeCommand(g *globals) *cobra.Command {
	var o cmpServe
	return leaf(&cobra.Command{
		Use:   "serve",
		Short: "Run the resident renderer of the Argo CD sidecar on a unix socket",
		Long:  cmpServeLong,
	}, o.addFlags, func(ctx context.Context, _ []string) error { return o.run(ctx, g.log) })
}

func (o *cmpServe) run(ctx context.Context, log zerolog.Logger) error {
	if o.dir == "" {
		return exitcode.Usagef("cmp serve needs --dir or %s", cli.EnvResidentDir)
	}
	if o.maxRenders < 1 {
		return exitcode.Usagef("--max-renders %d: want at least 1", o.maxRenders)
	}
	l, err := resident.Listen(ctx, o.dir)
	if err != nil {
		return err
	}
	version := buildVersion()
	cache := &cmp.Cache{Dir: o.cacheDir, MaxBytes: o.cacheBytes, InMemory: true}
	r := &cli.Resident{
		Version: version, MaxFileSize: o.maxFileSize, Cache: cache,
		Charts: chartsource.ForRender{Fetcher: chartsource.NewFetcher(chartsource.Options{
			UserAgent: "throughline/" + version, CacheDir: cli.DefaultChartCacheDir(),
		})},
	}
	m := residentmetrics.New(cache.MemoryStats)
	r.Renders = resident.NewRenderLimit(o.maxRenders)
	m.WatchRenders(r.Renders)
	if w := render.ActiveWorker(); w != nil {
		c, prev := *w, w.OnExit
		c.OnExit = func(e render.ChildExit) {
			if prev != nil {
				prev(e)
			}
			m.ObserveChild(e)
		}
		render.UseWorker(&c)
	}
	srv := &resident.Server{
		Handler: traceGenerate(r.Handle),
		Observe: func(res *resident.Response, took time.Duration) {
			m.Observe(res, took)
			log.Debug().Str("app", res.App).Int("code", res.Code).Bool("cached", res.CacheHit).Dur("took", took).Msg("generate")
		},
		OnError: func(err error) { log.Warn().Err(err).Msg("resident renderer connection") },
	}
	stopMetrics, err := serveMetrics(ctx, o.metricsAddr, m, log)
	if err != nil {
		_ = l.Close()
		return err
	}
	defer stopMetrics()
	log.Info().Str("socket", l.Socket()).Str("metrics", o.metricsAddr).Str("version", version).Msg("resident renderer ready")
	err = srv.Serve(ctx, l)
	log.Info().Str("socket", l.Socket()).Msg("resident renderer stopped; socket removed")
	return err
}

// serveMetrics serves /metrics on addr ("" : nothing) until ctx ends or
// the returned function is called.
func serveMetrics(ctx context.Context, addr string, m *residentmetrics.Metrics, log zerolog.Logger) (func(), error) {
	if addr == "" {
		return func() {}, nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for metrics on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn().Err(err).Str("addr", addr).Msg("metrics server")
		}
	}()
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx) // nothing to lose: a scrape in flight is retried
	}, nil
}

// traceGenerate is h with each render in a cmp.generate span: the app,
// the exit code, a cache hit or a render (and which budget of the render
// child ended it, if one did), the rendered hash and object count. The
// span is a root: Argo CD's cmp-server passes the plugin no trace context.
func traceGenerate(h resident.Handler) resident.Handler {
	return func(ctx context.Context, req resident.Request) *resident.Response {
		ctx, span := tracing.Start(ctx, "cmp.generate")
		defer span.End()
		res := h(ctx, req)
		if res == nil {
			span.SetStatus(codes.Error, "no response")
			return nil
		}
		span.SetAttributes(tracing.App.String(res.App), attribute.Int("throughline.code", res.Code),
			attribute.Bool("throughline.cache_hit", res.CacheHit), attribute.String("throughline.rendered_hash", res.RenderedHash),
			attribute.Int("throughline.objects", res.Objects))
		if res.BudgetKill != "" {
			span.SetAttributes(attribute.String("throughline.budget_kill", res.BudgetKill))
		}
		if res.Code != 0 {
			span.SetStatus(codes.Error, fmt.Sprintf("exit %d", res.Code))
		}
		return res
	}
}
