package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"rung.dev/rung/client"
)

// newContainerVerbs are the verbs for a sandbox's container and its
// background processes.
func newContainerVerbs(g *globals) []*cobra.Command {
	start := &cobra.Command{
		Use:   "start SANDBOX",
		Short: "Start the sandbox's container now (it otherwise starts on the first exec that needs it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			sb, err := c.StartContainer(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Println(sb.State)
			return nil
		},
	}
	stop := &cobra.Command{
		Use:   "stop SANDBOX",
		Short: "Stop the sandbox's container; its files stay",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			return c.StopContainer(cmd.Context(), args[0])
		},
	}
	var cwd, user string
	var env []string
	spawn := &cobra.Command{
		Use:   "spawn SANDBOX -- COMMAND...",
		Short: "Start a background process (dev server, watcher) and print its id",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			e, err := parseKV(env, "env")
			if err != nil {
				return err
			}
			p, err := c.StartProcess(cmd.Context(), args[0], client.ProcessRequest{Command: strings.Join(args[1:], " "), Cwd: cwd, Env: e, User: user})
			if err != nil {
				return err
			}
			fmt.Println(p.ID)
			return nil
		},
	}
	spawn.Flags().StringVar(&cwd, "cwd", "", "working directory (default /workspace)")
	spawn.Flags().StringVar(&user, "user", "", "run as this user of the image, e.g. root (default the sandbox's user)")
	spawn.Flags().StringArrayVar(&env, "env", nil, "environment variable k=v (repeatable)")
	ps := &cobra.Command{
		Use:   "ps SANDBOX",
		Short: "List the sandbox's background processes",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			list, err := c.Processes(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tPID\tSTATE\tSTARTED\tCOMMAND")
			for _, p := range list {
				state := "running"
				if p.Exit != nil {
					state = fmt.Sprintf("%s %d", p.Exit.Reason, p.Exit.Code)
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", p.ID, p.Pid, state, p.Started.Format(time.TimeOnly), strings.Join(p.Argv, " "))
			}
			return tw.Flush()
		},
	}
	var follow bool
	var after int64
	logs := &cobra.Command{
		Use:   "logs SANDBOX PROCESS [--follow] [--after SEQ]",
		Short: "Print a background process's output, re-attaching after SEQ",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			exit, err := c.ProcessOutput(cmd.Context(), args[0], args[1], after, follow, func(f client.OutputFrame) error {
				w := os.Stdout
				if f.Stream == "stderr" {
					w = os.Stderr
				}
				_, err := w.Write(f.Data)
				return err
			})
			if err != nil {
				return err
			}
			if exit != nil {
				return exitError{exit.Code}
			}
			return nil
		},
	}
	logs.Flags().BoolVarP(&follow, "follow", "f", false, "keep streaming until the process exits")
	logs.Flags().Int64Var(&after, "after", 0, "print only output after this sequence number")
	var signal string
	kill := &cobra.Command{
		Use:   "kill SANDBOX PROCESS [--signal SIG]",
		Short: "Send a signal to a background process",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			return c.SignalProcess(cmd.Context(), args[0], args[1], signal)
		},
	}
	kill.Flags().StringVarP(&signal, "signal", "s", "SIGTERM", "signal name")
	var timeout, interval time.Duration
	var port int
	var command string
	ready := &cobra.Command{
		Use:     "wait-ready SANDBOX (--port N | --command CMD) [--timeout 30s]",
		Aliases: []string{"wait-port"},
		Short:   "Wait until a TCP port inside the sandbox accepts connections, or until a command run there succeeds",
		Long: "Wait until the sandbox's container is ready, which is not the same as running: until a TCP port\n" +
			"inside it accepts connections (--port), or until a command run in it every --interval exits 0\n" +
			"(--command; each run is a journaled exec). Exits non-zero with the last attempt's output on timeout.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			if command != "" {
				return c.WaitCommand(cmd.Context(), args[0], command, interval, timeout)
			}
			return c.WaitPort(cmd.Context(), args[0], port, timeout)
		},
	}
	ready.Flags().IntVar(&port, "port", 0, "TCP port inside the sandbox")
	ready.Flags().StringVar(&command, "command", "", "shell command run in the container until it exits 0")
	ready.Flags().DurationVar(&interval, "interval", 250*time.Millisecond, "time between runs of --command")
	ready.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait")
	ready.MarkFlagsOneRequired("port", "command")
	ready.MarkFlagsMutuallyExclusive("port", "command")
	return []*cobra.Command{start, stop, spawn, ps, logs, kill, ready}
}
