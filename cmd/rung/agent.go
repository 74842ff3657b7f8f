package main

import (
	"fmt"
	"net"
	"os"

	"github.com/spf13/cobra"

	"rung.dev/rung/agent"
)

// newAgent is the in-container agent: the container tier bind-mounts this
// binary read-only into every container and runs `rung agent` as PID 1.
func newAgent() *cobra.Command {
	var socketDir string
	var listenFD int
	cmd := &cobra.Command{
		Use:    "agent",
		Short:  "run the in-container agent (PID 1 inside rung's containers)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := agent.ServerConfig{SocketDir: socketDir, DetachStdio: true}
			if listenFD > 0 {
				ln, err := inheritedListener(listenFD)
				if err != nil {
					return err
				}
				cfg.Listener = ln
			}
			return agent.Serve(cmd.Context(), cfg)
		},
	}
	cmd.Flags().StringVar(&socketDir, "socket-dir", "/.rung/run", "directory shared with the host for the agent's socket")
	cmd.Flags().IntVar(&listenFD, "listen-fd", 0, "serve this inherited, already listening socket instead of creating one in --socket-dir")
	return cmd
}

// inheritedListener turns descriptor fd, a listening socket the host
// passed in, into a listener, and closes fd itself so that commands the
// agent starts do not inherit it (the listener keeps a close-on-exec
// duplicate).
func inheritedListener(fd int) (net.Listener, error) {
	f := os.NewFile(uintptr(fd), "agent-listener")
	if f == nil {
		return nil, fmt.Errorf("agent: --listen-fd %d is not open", fd)
	}
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("agent: --listen-fd %d: %w", fd, err)
	}
	return ln, nil
}
