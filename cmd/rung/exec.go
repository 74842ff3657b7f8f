package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

func newExec(g *globals) *cobra.Command {
	var backend, cwd, user string
	var asJSON, stdin, tty, login bool
	var timeoutMS int64
	cmd := &cobra.Command{
		Use:   "exec SANDBOX [-t] [-l] [--backend B] [--user U] [--json] -- CMD...",
		Short: "Run a command line in a sandbox and exit with its exit code",
		Long: "Run a command line (the words after -- joined by spaces, as bash -c sees them) in a sandbox. " +
			"Output streams to stdout and stderr; with --json the result object is printed instead. " +
			"rung exec exits with the command's exit code. With -t the command runs on a pseudo-terminal in the " +
			"sandbox's container, with this terminal in raw mode (see rung shell).",
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			req := client.ExecRequest{Command: strings.Join(args[1:], " "), Backend: rung.Backend(backend), Cwd: cwd, User: user, TimeoutMS: timeoutMS, Login: login}
			if tty {
				if asJSON || stdin {
					return fmt.Errorf("exec -t: --json and --stdin do not apply: a terminal streams its input and output")
				}
				return runTerminal(cmd.Context(), c, args[0], req)
			}
			if stdin {
				b, err := readAllStdin()
				if err != nil {
					return err
				}
				req.Stdin = string(b)
			}
			var res client.ExecResult
			if asJSON {
				if res, err = c.Exec(cmd.Context(), args[0], req); err != nil {
					return err
				}
				if err := printJSON(res); err != nil {
					return err
				}
			} else if res, err = c.ExecStream(cmd.Context(), args[0], req, os.Stdout, os.Stderr); err != nil {
				return err
			}
			if res.ExitCode != 0 {
				return exitError{res.ExitCode}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&backend, "backend", "", "auto, isolate or container (default auto)")
	cmd.Flags().StringVar(&cwd, "cwd", "", "working directory (default /workspace)")
	cmd.Flags().StringVar(&user, "user", "", "run as this user of the image, e.g. root (default the sandbox's user); another user than the sandbox's runs in the container")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result object as JSON")
	cmd.Flags().BoolVarP(&login, "login", "l", false, "run as a login shell's command (bash -l -c): after /etc/profile and ~/.profile")
	cmd.Flags().BoolVarP(&stdin, "stdin", "i", false, "send this process's stdin to the command")
	cmd.Flags().BoolVarP(&tty, "tty", "t", false, "run on a pseudo-terminal (container tier), interactively")
	cmd.Flags().Int64Var(&timeoutMS, "timeout-ms", 0, "wall time limit in milliseconds (default: the server's)")
	return cmd
}

func readAllStdin() ([]byte, error) { return io.ReadAll(os.Stdin) }
