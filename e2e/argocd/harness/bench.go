package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// Bench environment (BenchmarkCMPServerMonorepo, make bench-cmp-server).
const (
	// BenchKustomizeEnv is the kustomize binary of the `kustomize build`
	// plugin (required).
	BenchKustomizeEnv = "THROUGHLINE_BENCH_KUSTOMIZE"
	// BenchAppsEnv is the monorepo's app count (300), each in 3
	// environments.
	BenchAppsEnv = "THROUGHLINE_BENCH_APPS"
	// BenchSampleEnv is how many apps each pass generates (4, spread
	// evenly over the monorepo, the largest included; each in its 3
	// environments) where only apps/<app> is streamed.
	BenchSampleEnv = "THROUGHLINE_BENCH_SAMPLE"
	// BenchSampleWholeEnv is the same where the whole repository is
	// streamed at least once per generate (1, in one environment, cold
	// only: each generate takes up to a minute on a loaded machine).
	BenchSampleWholeEnv = "THROUGHLINE_BENCH_SAMPLE_WHOLE"
)

// benchPlugin is one CMP server of the benchmark: a plugin.yaml derived
// from the repository's, with its own name and generate command.
type benchPlugin struct {
	name    string
	command []string
	// resident: the plugin renders through throughline cmp serve;
	// throughline: the output must hold the Acceptance.
	resident, throughline bool
}

// benchSetting is what the repo-server is configured with.
type benchSetting struct {
	name string
	// discover keeps plugin.yaml's discover rule: then even a named plugin
	// is matched (MatchRepository streams the repository once more).
	discover bool
	// narrow streams apps/<app> (manifest-generate-paths ".;../../base"
	// with --plugin-use-manifest-generate-paths) instead of the repository.
	narrow bool
	// excludes are the --plugin-tar-exclude globs.
	excludes []string
}

// benchSettings, the tuned one first. The two that stream the whole
// repository take a minute per generate on a loaded 2-core machine: they
// run one environment of the sampled apps, cold only.
var benchSettings = []benchSetting{
	{name: "tar excludes .git/*, manifest-generate-paths, plugin.yaml without discover (named plugin only)",
		narrow: true, excludes: []string{".git/*"}},
	{name: "tar excludes .git/*, manifest-generate-paths, plugin.yaml as shipped (discover)", discover: true, narrow: true,
		excludes: []string{".git/*"}},
	{name: "defaults (plugin.yaml as shipped, whole repository with .git)", discover: true},
}

// benchSample is one generate's durations by plugin name.
type benchSample map[string]time.Duration

// Bench drives Argo CD's cmp-server (start) over the monorepo of
// internal/benchfixture (BenchAppsEnv apps x 3 environments, written by
// hack/benchmonorepo, committed and packed like a clone) as
// argocd-repo-server does, through d: per setting (benchSettings), four CMP
// servers side by side, each with its own plugin.yaml: throughline-cmp
// through the resident renderer, throughline-cmp in-process (its own disk
// cache), `kustomize build` and `true` (what the tar stream, its unpacking
// and a process start cost alone). Each generate of a pass calls the four
// in turn (the order rotating), so that their ratios come from the same
// moments of a shared machine. Passes: cold (empty caches), then after a
// commit that changes one app of the sample. It prints p50, p99 and max per
// plugin and the ratios to `true` and to kustomize, and reports the tuned
// setting's figures as benchmark metrics. b.N is ignored: run it with
// -benchtime 1x.
func Bench(b *testing.B, d Driver, start StartFunc) {
	kz := os.Getenv(BenchKustomizeEnv)
	if kz == "" {
		b.Fatalf("%s must name a kustomize binary (make bench-cmp-server builds bin/kustomize)", BenchKustomizeEnv)
	}
	apps := envInt(b, BenchAppsEnv, 300)
	sample, sampleWhole := min(apps, envInt(b, BenchSampleEnv, 4)), min(apps, envInt(b, BenchSampleWholeEnv, 1))
	bin := Throughline(b)
	top := RepoRoot(b)
	base, err := os.MkdirTemp("/tmp", "cmpb") // unix socket paths: < 108 bytes
	Must(b, err)
	b.Cleanup(func() { _ = os.RemoveAll(base) })
	gen := filepath.Join(base, "benchmonorepo")
	goRun(b, top, "go", "build", "-o", gen, "./hack/benchmonorepo")
	repo := filepath.Join(base, "repo")
	goRun(b, top, gen, "gen", "-apps", strconv.Itoa(apps), repo)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "monorepo"}, {"gc", "-q"}} {
		git(b, repo, args...)
	}
	cfg, err := os.ReadFile(filepath.Join(top, "plugin.yaml"))
	Must(b, err)
	plugins := []benchPlugin{
		{name: pluginName, command: []string{"throughline-cmp", "generate"}, resident: true, throughline: true},
		{name: "throughline-inprocess", command: []string{"throughline-cmp", "generate"}, throughline: true},
		{name: "kustomize", command: []string{kz, "build", "."}},
		{name: "true", command: []string{"true"}},
	}
	fmt.Printf("== monorepo: %d apps x 3 environments; %s\n", apps, loadAverage())
	const revision = 2
	for si, s := range benchSettings {
		n := sample
		if s.discover || !s.narrow {
			n = sampleWhole // the whole repository is streamed at least once per generate
		}
		var picked []int // sampled apps, evenly spread, the largest included
		for i := range n {
			picked = append(picked, (apps-1)-i*apps/n)
		}
		slices.Sort(picked)
		dir := filepath.Join(base, fmt.Sprintf("s%d", si))
		sockDir := filepath.Join(dir, "s")
		Must(b, os.MkdirAll(sockDir, 0o755))
		b.Setenv("ARGOCD_PLUGINSOCKFILEPATH", sockDir)
		b.Setenv("ARGOCD_CMP_WORKDIR", filepath.Join(dir, "w"))
		Must(b, os.MkdirAll(filepath.Join(dir, "w"), 0o755))
		b.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		b.Setenv("THROUGHLINE_CACHE_DIR", filepath.Join(dir, "cache-resident"))
		res := startResident(b, bin, filepath.Join(dir, "r"))
		for _, p := range plugins {
			if !p.resident {
				b.Setenv("THROUGHLINE_RESIDENT_DIR", "")
				b.Setenv("THROUGHLINE_CACHE_DIR", filepath.Join(dir, "cache-inprocess"))
			}
			pdir := filepath.Join(dir, "c-"+p.name)
			Must(b, os.MkdirAll(pdir, 0o755))
			Must(b, os.WriteFile(filepath.Join(pdir, "plugin.yaml"), benchConfig(b, cfg, p, s.discover), 0o644))
			start(b, pdir)
			waitSocket(b, sockDir, filepath.Join(sockDir, p.name+".sock"))
		}
		whole := s.discover || !s.narrow
		envs := []string{"dev", "staging", "production"}
		passes := 2
		if whole {
			envs, passes = envs[2:], 1
		}
		for pass := range passes {
			label := "cold"
			if pass == 1 {
				changed := fmt.Sprintf("app-%03d", picked[len(picked)/2])
				goRun(b, top, gen, "change", "-app", changed, "-revision", strconv.Itoa(revision), repo)
				git(b, repo, "commit", "-q", "-am", "change "+changed)
				label = "after a commit changing " + changed
			}
			samples := benchPass(b, d, repo, picked, envs, plugins, s)
			printBench(fmt.Sprintf("%s: %s; %d apps sampled", s.name, label, len(picked)), plugins, samples)
			if si == 0 && pass == 1 {
				reportBench(b, samples)
			}
		}
		if passes == 2 {
			git(b, repo, "revert", "--no-edit", "HEAD") // the next setting changes the same app again
		}
		if n, want := res.served(), passes*len(envs)*len(picked); n < want {
			b.Errorf("%s: the resident renderer answered %d generates, want %d", s.name, n, want)
		}
	}
}

// benchPass generates every sampled app in every environment through each
// plugin in turn.
func benchPass(b *testing.B, d Driver, repo string, picked []int, envs []string, plugins []benchPlugin, s benchSetting) []benchSample {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var out []benchSample
	for k, i := range picked {
		app := fmt.Sprintf("app-%03d", i)
		for e, env := range envs {
			rel := "apps/" + app + "/overlays/" + env
			root := repo
			if s.narrow {
				root = filepath.Join(repo, "apps", app)
			}
			vars := Env(repo, rel, "ARGOCD_APP_NAME="+app+"-"+env, "ARGOCD_ENV_ENVIRONMENT="+env)
			sm := benchSample{}
			counts := map[string]int{}
			for j := range plugins {
				p := plugins[(j+k*3+e)%len(plugins)]
				t0 := time.Now()
				got, err := d.Generate(ctx, filepath.Join(repo, filepath.FromSlash(rel)), repo, root, p.name, vars, s.excludes)
				sm[p.name] = time.Since(t0)
				if err != nil {
					b.Fatalf("%s: generate %s through %s: %v", s.name, rel, p.name, err)
				}
				counts[p.name] = len(got)
				if p.throughline && !strings.Contains(strings.Join(got, "\n"), `"kind":"Acceptance"`) {
					b.Fatalf("%s: %s through %s: no Acceptance in %d manifests", s.name, rel, p.name, len(got))
				}
			}
			// The same objects from every renderer (plus the Acceptance).
			if kz := counts["kustomize"]; kz == 0 || counts[pluginName] != kz+1 || counts["throughline-inprocess"] != kz+1 {
				b.Fatalf("%s: %s: manifests per plugin %v, want kustomize's count plus the Acceptance", s.name, rel, counts)
			}
			out = append(out, sm)
		}
	}
	return out
}

// benchConfig is plugin.yaml renamed to p.name, running p.command, with or
// without its discover rule.
func benchConfig(b *testing.B, cfg []byte, p benchPlugin, discover bool) []byte {
	var m map[string]any
	Must(b, yaml.Unmarshal(cfg, &m))
	m["metadata"].(map[string]any)["name"] = p.name
	spec := m["spec"].(map[string]any)
	spec["generate"].(map[string]any)["command"] = p.command
	if !discover {
		delete(spec, "discover")
	}
	out, err := yaml.Marshal(m)
	Must(b, err)
	return out
}

// quantile is the q-quantile of ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*q+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func column(samples []benchSample, name string) []time.Duration {
	var out []time.Duration
	for _, s := range samples {
		out = append(out, s[name])
	}
	return out
}

func ms(d time.Duration) string { return fmt.Sprintf("%8.1f ms", float64(d)/float64(time.Millisecond)) }

func printBench(title string, plugins []benchPlugin, samples []benchSample) {
	fmt.Printf("-- %s (%d generates each)\n", title, len(samples))
	tr, kz := column(samples, "true"), column(samples, "kustomize")
	for _, p := range plugins {
		c := column(samples, p.name)
		fmt.Printf("   %-22s p50 %s  p99 %s  max %s  | p50 %5.2fx p99 %5.2fx of true | p50 %5.3fx of kustomize\n",
			p.name, ms(quantile(c, .5)), ms(quantile(c, .99)), ms(quantile(c, 1)),
			ratio(quantile(c, .5), quantile(tr, .5)), ratio(quantile(c, .99), quantile(tr, .99)),
			ratio(quantile(c, .5), quantile(kz, .5)))
	}
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// reportBench reports the tuned setting's pass after a commit.
func reportBench(b *testing.B, samples []benchSample) {
	c, tr, kz := column(samples, pluginName), column(samples, "true"), column(samples, "kustomize")
	b.ReportMetric(float64(quantile(c, .5))/1e6, "resident-p50-ms")
	b.ReportMetric(float64(quantile(c, .99))/1e6, "resident-p99-ms")
	b.ReportMetric(float64(quantile(tr, .99))/1e6, "tar-p99-ms")
	b.ReportMetric(ratio(quantile(c, .99), quantile(tr, .99)), "p99/tar")
	b.ReportMetric(ratio(quantile(c, .5), quantile(kz, .5)), "p50/kustomize")
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

func goRun(b *testing.B, dir, name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func git(b *testing.B, repo string, args ...string) {
	cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=bench", "-c", "user.email=bench@throughline.dev",
		"-c", "commit.gpgsign=false", "-c", "gc.auto=0"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// loadAverage is /proc/loadavg's first three fields (the machine is shared).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load average unknown"
	}
	f := strings.Fields(string(b))
	return "load average " + strings.Join(f[:min(3, len(f))], " ")
}
