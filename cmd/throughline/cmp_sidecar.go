package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/throughline-dev/throughline/cmp/resident"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/cli"
)

// sidecarGrace is how long cmp sidecar waits for a child it sent SIGTERM
// before it kills it.
const sidecarGrace = 10 * time.Second

const cmpSidecarLong = `The entrypoint of the Argo CD sidecar container: starts the resident renderer
(throughline cmp serve, with the flags given here) and the command after --
(Argo CD's argocd-cmp-server), with ` + cli.EnvResidentDir + ` set for it so that
the plugin it runs renders through the resident renderer. When either exits,
it stops the other (SIGTERM, then SIGKILL after 10 s), removes the socket if
the resident renderer could not, and exits: the container restarts whole.
SIGTERM and SIGINT are forwarded to both as SIGTERM.

Example (deploy/argocd/repo-server-sidecar.yaml):

  throughline cmp sidecar --dir /tmp/throughline-resident -- /var/run/argocd/argocd-cmp-server`

func newCMPSidecarCommand(g *globals) *cobra.Command {
	var o cmpServe
	cmd := &cobra.Command{
		Use:   "sidecar [flags] -- COMMAND [ARGS...]",
		Short: "Run the resident renderer and argocd-cmp-server together (the sidecar's entrypoint)",
		Long:  cmpSidecarLong,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || cmd.ArgsLenAtDash() != 0 {
				return exitcode.Usagef("cmp sidecar needs the command to run after --, e.g. -- /var/run/argocd/argocd-cmp-server")
			}
			if o.dir == "" {
				return exitcode.Usagef("cmp sidecar needs --dir or %s", cli.EnvResidentDir)
			}
			// Refuse a bad directory before starting anything.
			if err := resident.CheckDir(o.dir); err != nil {
				return err
			}
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding throughline's executable: %w", err)
			}
			serveArgs := append([]string{"cmp", "serve", "--log-level", g.logLevel, "--log-format", g.logFormat}, o.args()...)
			serve := exec.Command(self, serveArgs...)
			plugin := exec.Command(args[0], args[1:]...)
			plugin.Env = append(os.Environ(), cli.EnvResidentDir+"="+o.dir)
			return supervise(cmd.Context(), g.log, []*exec.Cmd{serve, plugin}, sidecarGrace, func() {
				// cmp serve removes its socket on SIGTERM; after a
				// SIGKILL or a crash nobody else would.
				if err := os.Remove(resident.SocketPath(o.dir)); err == nil {
					g.log.Info().Str("socket", resident.SocketPath(o.dir)).Msg("removed the socket of the ended resident renderer")
				}
			})
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

// supervise starts cmds (their stdout and stderr this process's) and waits
// until the first ends or ctx ends; then it sends SIGTERM to the others,
// SIGKILL to those still running after grace, calls cleanup and returns
// why it ended: the first command's exit (an error even when it exited 0:
// a sidecar's processes are not meant to end), or nil when ctx ended.
func supervise(ctx context.Context, log zerolog.Logger, cmds []*exec.Cmd, grace time.Duration, cleanup func()) error {
	type exit struct {
		i   int
		err error
	}
	exits := make(chan exit, len(cmds))
	started := 0
	var startErr error
	for i, c := range cmds {
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		c.SysProcAttr = childProcAttr()
		if err := c.Start(); err != nil {
			startErr = fmt.Errorf("starting %s: %w", c.Path, err)
			break
		}
		log.Info().Str("command", c.Path).Int("pid", c.Process.Pid).Msg("started")
		started++
		go func() { exits <- exit{i, c.Wait()} }()
	}
	var first error
	running := started
	if startErr == nil {
		select {
		case e := <-exits:
			running--
			c := cmds[e.i]
			first = fmt.Errorf("%s (pid %d) ended: %w", c.Path, c.Process.Pid, orExited(e.err))
			log.Error().Err(e.err).Str("command", c.Path).Msg("a sidecar process ended: stopping the other")
		case <-ctx.Done():
			log.Info().Msg("stopping the sidecar's processes")
		}
	}
	for _, c := range cmds[:started] {
		// An ended process refuses the signal: nothing to stop.
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	for running > 0 {
		select {
		case <-exits:
			running--
		case <-timer.C:
			for _, c := range cmds[:started] {
				_ = c.Process.Kill() // an ended process: nothing to kill
			}
		}
	}
	cleanup()
	return errors.Join(startErr, first)
}

// errExited0 is why supervise ends when a process exited 0.
var errExited0 = errors.New("exited 0")

func orExited(err error) error {
	if err == nil {
		return errExited0
	}
	return err
}
