// Command agentmain runs the in-container agent for the container tests,
// so they do not depend on cmd/rung: `agentmain agent --socket-dir DIR`.
package main

import (
	"context"
	"fmt"
	"os"

	"rung.dev/rung/agent"
)

func main() {
	if len(os.Args) != 4 || os.Args[1] != "agent" || os.Args[2] != "--socket-dir" {
		fmt.Fprintln(os.Stderr, "usage: agentmain agent --socket-dir DIR")
		os.Exit(2)
	}
	if err := agent.Serve(context.Background(), agent.ServerConfig{SocketDir: os.Args[3]}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
