// Command benchmonorepo writes the monorepo of hack/bench-monorepo.sh
// (internal/benchfixture.WriteMonorepo) and replays what Argo CD does to it:
// every app of every environment rendered by one process started in a
// fresh copy of the repository, as argocd-cmp-server starts the plugin.
//
//	benchmonorepo gen -apps 300 DIR
//	benchmonorepo change -app app-007 -revision 2 DIR
//	benchmonorepo run -label NAME -repo DIR [-json FILE] [-server-pid PID] -- COMMAND ARGS...
//
// run copies, per render, the app's directory and the policy file into a
// new directory (the plugin reads nothing else; argocd-cmp-server extracts
// the whole repository, which costs the same to the plugin and is not
// timed), runs COMMAND in apps/<app>/overlays/<env> with the plugin's
// environment (ARGOCD_APP_*, ARGOCD_ENV_ENVIRONMENT) and times that process
// only: wall clock, CPU (user + system, its render child included) and peak
// RSS (wait4's, as /usr/bin/time -v). With -server-pid (the resident
// renderer the command hands its renders to), the CPU time that process
// spent during the pass (/proc/PID/stat) is added to the pass's CPU and
// shown apart. It prints one summary line and, with -json, appends it to
// FILE as a JSON object.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/throughline-dev/throughline/internal/benchfixture"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "benchmonorepo:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: benchmonorepo gen|change|run ARGS")
	}
	fs := flag.NewFlagSet("benchmonorepo "+args[0], flag.ContinueOnError)
	switch args[0] {
	case "gen":
		n := fs.Int("apps", 300, "number of apps (each in every environment)")
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 1 {
			return errors.New("usage: benchmonorepo gen -apps N DIR")
		}
		apps, err := benchfixture.WriteMonorepo(fs.Arg(0), *n)
		if err != nil {
			return err
		}
		objs := 0
		for _, a := range apps {
			objs += a.Objects
		}
		fmt.Printf("%d apps x %d environments, %d objects per environment (%d to %d per app)\n", len(apps),
			len(benchfixture.MonorepoEnvironments), objs, apps[0].Objects, benchfixture.MonorepoMaxObjects)
		return nil
	case "change":
		app := fs.String("app", "", "app whose base changes")
		rev := fs.String("revision", "2", "new value of its ConfigMap's revision")
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 1 || *app == "" {
			return errors.New("usage: benchmonorepo change -app NAME [-revision R] DIR")
		}
		return benchfixture.ChangeMonorepoApp(fs.Arg(0), *app, *rev)
	case "run":
		label := fs.String("label", "", "name of this pass")
		repo := fs.String("repo", "", "the monorepo")
		out := fs.String("json", "", "append the summary to this file (JSON lines)")
		server := fs.Int("server-pid", 0, "count this process's CPU time during the pass too (the resident renderer)")
		if err := fs.Parse(args[1:]); err != nil || *repo == "" || fs.NArg() == 0 {
			return errors.New("usage: benchmonorepo run -label NAME -repo DIR [-json FILE] [-server-pid PID] -- COMMAND [ARG]")
		}
		return replay(*label, *repo, *out, *server, fs.Args())
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// summary is one pass over every render.
type summary struct {
	Label   string `json:"label"`
	Renders int    `json:"renders"`
	Cached  int    `json:"cached"`
	// Resident is how many renders the resident renderer gave (the
	// plugin logged resident=true).
	Resident  int     `json:"resident,omitempty"`
	WallS     float64 `json:"wallS"`
	CPUS      float64 `json:"cpuS"`
	MedianMs  float64 `json:"medianMs"`
	P90Ms     float64 `json:"p90Ms"`
	MaxMs     float64 `json:"maxMs"`
	MaxRSSMiB float64 `json:"maxRssMiB"`
	// ServerCPUS is the resident renderer's CPU time during the pass
	// (included in CPUS).
	ServerCPUS float64 `json:"serverCpuS,omitempty"`
}

// processCPU is the user + system time of process pid and of its children
// it waited for (the render children of the resident renderer) so far
// (/proc/PID/stat, in clock ticks of 1/100 s).
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	var utime, stime, cutime, cstime int64
	if _, err := fmt.Sscan(f[11]+" "+f[12]+" "+f[13]+" "+f[14], &utime, &stime, &cutime, &cstime); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(utime+stime+cutime+cstime) * 10 * time.Millisecond, nil
}

// replay renders every app in every environment, one process each in a
// fresh copy, and prints the summary.
func replay(label, repo, out string, server int, command []string) error {
	entries, err := os.ReadDir(filepath.Join(repo, "apps"))
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "benchmonorepo-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }() // a temporary directory
	s := summary{Label: label}
	var serverStart time.Duration
	if server > 0 {
		if serverStart, err = processCPU(server); err != nil {
			return err
		}
	}
	var walls []float64
	for _, e := range entries {
		for _, env := range benchfixture.MonorepoEnvironments {
			r, err := renderOne(repo, work, e.Name(), env, command)
			if err != nil {
				return err
			}
			s.Renders++
			walls = append(walls, r.wall.Seconds()*1e3)
			s.WallS += r.wall.Seconds()
			s.CPUS += r.cpu.Seconds()
			s.MaxRSSMiB = max(s.MaxRSSMiB, r.rssMiB)
			if r.cached {
				s.Cached++
			}
			if r.resident {
				s.Resident++
			}
		}
	}
	if server > 0 {
		end, err := processCPU(server)
		if err != nil {
			return fmt.Errorf("the resident renderer (pid %d) after the pass: %w", server, err)
		}
		s.ServerCPUS = (end - serverStart).Seconds()
		s.CPUS += s.ServerCPUS
	}
	slices.Sort(walls)
	s.MedianMs, s.P90Ms, s.MaxMs = walls[len(walls)/2], walls[len(walls)*9/10], walls[len(walls)-1]
	fmt.Printf("%-40s %4d renders (%3d cached, %3d resident)  total wall %8.2f s  cpu %8.2f s  per render median %7.1f ms  p90 %7.1f ms"+
		"  max %8.1f ms  peak RSS %6.1f MiB  (server cpu %.2f s)\n",
		s.Label, s.Renders, s.Cached, s.Resident, s.WallS, s.CPUS, s.MedianMs, s.P90Ms, s.MaxMs, s.MaxRSSMiB, s.ServerCPUS)
	if out == "" {
		return nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// result is one render's measurements.
type result struct {
	wall, cpu time.Duration
	rssMiB    float64
	cached    bool
	resident  bool
}

// renderOne copies app into a fresh directory under work and runs command
// in its env overlay with the plugin's environment.
func renderOne(repo, work, app, env string, command []string) (result, error) {
	fresh, err := os.MkdirTemp(work, "r-")
	if err != nil {
		return result{}, err
	}
	defer func() { _ = os.RemoveAll(fresh) }() // a temporary directory
	if err := os.CopyFS(filepath.Join(fresh, "apps", app), os.DirFS(filepath.Join(repo, "apps", app))); err != nil {
		return result{}, fmt.Errorf("copying %s: %w", app, err)
	}
	pol, err := os.ReadFile(filepath.Join(repo, "throughline-policy.yaml"))
	if err != nil {
		return result{}, err
	}
	if err := os.WriteFile(filepath.Join(fresh, "throughline-policy.yaml"), pol, 0o644); err != nil {
		return result{}, err
	}
	path := "apps/" + app + "/overlays/" + env
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Dir = filepath.Join(fresh, filepath.FromSlash(path))
	cmd.Env = append(os.Environ(),
		"ARGOCD_APP_NAME="+app+"-"+env, "ARGOCD_APP_NAMESPACE="+app+"-"+env, "ARGOCD_APP_SOURCE_PATH="+path,
		"ARGOCD_APP_REVISION="+os.Getenv("BENCH_REVISION"), "ARGOCD_APP_SOURCE_REPO_URL=https://git.example.test/monorepo.git",
		"ARGOCD_ENV_ENVIRONMENT="+env, "KUBE_VERSION=1.31.0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err = cmd.Run()
	wall := time.Since(t0)
	if err != nil {
		return result{}, fmt.Errorf("%s in %s: %w: %s", strings.Join(command, " "), path, err, stderr.String())
	}
	if stdout.Len() == 0 {
		return result{}, fmt.Errorf("%s in %s: nothing on stdout", strings.Join(command, " "), path)
	}
	r := result{wall: wall, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(),
		cached: strings.Contains(stderr.String(), "cached=true"), resident: strings.Contains(stderr.String(), "resident=true")}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.rssMiB = float64(ru.Maxrss) / 1024
	}
	return r, nil
}
