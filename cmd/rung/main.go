// Command rung is rung's one binary: `rung serve` runs the daemon, and the
// other verbs are a CLI over the Go SDK (package client).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// exitError ends the process with a given status and no message (rung
// exec passes the command's exit code through).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRoot().ExecuteContext(ctx)
	stop()
	os.Exit(exitCode(err))
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "rung:", err)
	if errors.Is(err, rung.ErrNotFound) {
		return 3
	}
	return 1
}

// globals are the flags every client verb shares.
type globals struct {
	addr  string
	token string
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "rung",
		Short:         "rung gives AI agents a computer: sandboxes with a workspace, exec and files",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.addr, "addr", "", "daemon address (default $RUNG_ADDR or 127.0.0.1:7420)")
	root.PersistentFlags().StringVar(&g.token, "token", "", "API token (default $RUNG_TOKEN or the data dir's admin token)")
	root.AddCommand(
		newServe(g),
		newCreate(g), newLs(g), newRm(g), newExec(g), newShell(g),
		newPut(g), newGet(g), newFiles(g), newCp(g),
		newJournal(g), newEvents(g), newToken(g), newTenant(g),
		newAgent(), newImage(), newMCP(g), newTop(g),
	)
	root.AddCommand(newContainerVerbs(g)...)
	root.AddCommand(newSnapshotVerbs(g)...)
	root.AddCommand(newNetworkVerbs(g)...)
	return root
}

const defaultAddr = "127.0.0.1:7420"

// dataDir is --data, else $RUNG_DATA, else /var/lib/rung.
func dataDir(flag string) string {
	if flag != "" {
		return flag
	}
	if d := os.Getenv("RUNG_DATA"); d != "" {
		return d
	}
	return "/var/lib/rung"
}

// client returns an SDK client for the daemon the flags or environment
// name, falling back to the local data dir's admin token.
func (g *globals) client() (*client.Client, error) {
	addr := g.addr
	if addr == "" {
		addr = os.Getenv("RUNG_ADDR")
	}
	if addr == "" {
		addr = defaultAddr
	}
	tok := g.token
	if tok == "" {
		tok = os.Getenv("RUNG_TOKEN")
	}
	if tok == "" {
		b, err := os.ReadFile(dataDir("") + "/token")
		if err != nil {
			return nil, fmt.Errorf("no token: set --token or RUNG_TOKEN (or run as a user who can read %s/token)", dataDir(""))
		}
		tok = string(trimSpace(b))
	}
	return client.New(addr, client.WithToken(tok)), nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
