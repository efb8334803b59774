package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/throughline-dev/throughline/render"
)

// renderWorker is how every command renders a kustomization: krusty runs in
// a child process of this binary (the hidden render.WorkerCommand), killed
// when the render's context ends (--timeout, SIGTERM). Tests replace it.
var renderWorker = &render.Worker{Args: []string{render.WorkerCommand}}

// newRenderWorkerCommand is the child's side: hidden, so it is neither in
// the help nor in docs/cli.
func newRenderWorkerCommand(stdin io.Reader, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:    render.WorkerCommand,
		Short:  "Render one kustomization for a parent throughline process (internal)",
		Hidden: true,
		Args:   noArgs,
		RunE:   func(cmd *cobra.Command, _ []string) error { return render.ServeWorker(cmd.Context(), stdin, stdout) },
	}
}
