package main

import (
	"github.com/spf13/cobra"

	"rung.dev/rung/agent"
)

// newAgent is the in-container agent: the container tier bind-mounts this
// binary read-only into every container and runs `rung agent` as PID 1.
func newAgent() *cobra.Command {
	var socketDir string
	cmd := &cobra.Command{
		Use:    "agent",
		Short:  "run the in-container agent (PID 1 inside rung's containers)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return agent.Serve(cmd.Context(), agent.ServerConfig{SocketDir: socketDir})
		},
	}
	cmd.Flags().StringVar(&socketDir, "socket-dir", "/.rung/run", "directory shared with the host for the agent's socket")
	return cmd
}
