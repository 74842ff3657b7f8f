package main

import (
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"rung.dev/rung/mcp"
)

func newMCP(g *globals) *cobra.Command {
	var level string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve rung's MCP tools to a local agent over stdin and stdout",
		Long: "Serve the Model Context Protocol over stdin and stdout (one JSON-RPC message a line), for an agent's MCP " +
			"client to start as a subprocess. Every tool call goes to the daemon at --addr ($RUNG_ADDR) with --token " +
			"($RUNG_TOKEN), so the agent reaches that token's sandboxes only. Logs go to stderr. `rung serve` also serves " +
			"MCP over Streamable HTTP at /mcp.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var lv slog.Level
			if err := lv.UnmarshalText([]byte(level)); err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
			return mcp.ServeStdio(cmd.Context(), c, mcp.StdioConfig{Logger: log})
		},
	}
	cmd.Flags().StringVar(&level, "log-level", "warn", "debug, info, warn or error (on stderr)")
	return cmd
}
