package mcp

import (
	"context"
	"errors"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// Background process tools: start, list, output, signal.

type processStartIn struct {
	Sandbox string            `json:"sandbox" jsonschema:"the sandbox's id (sbx_...) or name"`
	Command string            `json:"command,omitempty" jsonschema:"a command line, run by the image's shell (e.g. 'python3 -m http.server 8000')"`
	Argv    []string          `json:"argv,omitempty" jsonschema:"or: a program and its arguments, run directly"`
	Cwd     string            `json:"cwd,omitempty" jsonschema:"working directory (default /workspace)"`
	Env     map[string]string `json:"env,omitempty" jsonschema:"extra environment variables"`
	User    string            `json:"user,omitempty" jsonschema:"user to run as (default the sandbox's)"`
}

type processRef struct {
	Sandbox string `json:"sandbox" jsonschema:"the sandbox's id (sbx_...) or name"`
	Process string `json:"process" jsonschema:"the process's id, as process_start or process_list return it"`
}

type processList struct {
	Processes []client.Process `json:"processes"`
}

type outputIn struct {
	Sandbox  string `json:"sandbox" jsonschema:"the sandbox's id (sbx_...) or name"`
	Process  string `json:"process" jsonschema:"the process's id"`
	After    int64  `json:"after,omitempty" jsonschema:"return output after this sequence number: pass the last_seq of the previous call to read only what is new (default 0: from the oldest output kept)"`
	WaitMS   int64  `json:"wait_ms,omitempty" jsonschema:"wait up to this many milliseconds for the process to exit, returning what it printed meanwhile (default 0: return at once)"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"stop after this many bytes of output (default 32768); more is then true: call again with after = last_seq"`
}

type outputOut struct {
	Stdout  string       `json:"stdout"`
	Stderr  string       `json:"stderr"`
	LastSeq int64        `json:"last_seq" jsonschema:"the sequence number of the last output returned: pass it as after next time"`
	More    bool         `json:"more,omitempty" jsonschema:"max_bytes was reached before the end of the output kept"`
	Running bool         `json:"running"`
	Exit    *client.Exit `json:"exit,omitempty" jsonschema:"how it ended, once it has: code, signal, reason"`
}

type signalIn struct {
	Sandbox string `json:"sandbox" jsonschema:"the sandbox's id (sbx_...) or name"`
	Process string `json:"process" jsonschema:"the process's id"`
	Signal  string `json:"signal,omitempty" jsonschema:"signal to send to the process's group (default SIGTERM)"`
}

type signaled struct {
	Signaled string `json:"signaled"`
	Signal   string `json:"signal"`
}

// errEnough stops reading a process's output at the byte budget.
var errEnough = errors.New("enough output")

func (t *tools) addProcessTools(s *sdk.Server) {
	add(t, s, spec{name: "process_start", title: "Start a background process",
		desc: "Start a long-running process (a dev server, a watcher, a build) in the sandbox's container, in the background. " +
			"Returns its id at once; read what it prints with process_output, wait for its port with wait_ready, reach it with " +
			"preview_url, stop it with process_signal. Give command or argv. It keeps the sandbox's container running until it exits."},
		func(ctx context.Context, c *client.Client, in processStartIn) (any, error) {
			if (in.Command == "") == (len(in.Argv) == 0) {
				return nil, rung.Errorf(rung.ErrInvalid, "give either command or argv")
			}
			return c.StartProcess(ctx, in.Sandbox, client.ProcessRequest{Command: in.Command, Argv: in.Argv, Cwd: in.Cwd, Env: in.Env, User: in.User})
		})
	add(t, s, spec{name: "process_list", title: "List background processes", readOnly: true,
		desc: "List the sandbox's background processes, running and recently exited, with their ids, argv, and exits."},
		func(ctx context.Context, c *client.Client, in sandboxRef) (processList, error) {
			ps, err := c.Processes(ctx, in.Sandbox)
			return processList{Processes: ps}, err
		})
	add(t, s, spec{name: "process_output", title: "Read a background process's output", readOnly: true,
		desc: "Read what a background process printed (stdout and stderr), after sequence number after. With wait_ms, wait up to " +
			"that long for it to exit first. Says whether it is still running and, once it has exited, how.",
		schema: []schemaRule{atLeast("after", 0), between("wait_ms", 0, 600_000), between("max_bytes", 1, maxOutputBytes)}},
		t.processOutput)
	add(t, s, spec{name: "process_signal", title: "Signal a background process", destructive: true,
		desc:   "Send a signal to a background process's process group: SIGTERM (the default) asks it to stop, SIGKILL ends it, SIGINT is Ctrl-C, SIGHUP often reloads.",
		schema: []schemaRule{oneOf("signal", "SIGTERM", "SIGKILL", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGSTOP", "SIGCONT")}},
		func(ctx context.Context, c *client.Client, in signalIn) (signaled, error) {
			sig := in.Signal
			if sig == "" {
				sig = "SIGTERM"
			}
			return signaled{Signaled: in.Process, Signal: sig}, c.SignalProcess(ctx, in.Sandbox, in.Process, sig)
		})
}

func (t *tools) processOutput(ctx context.Context, c *client.Client, in outputIn) (outputOut, error) {
	max := in.MaxBytes
	if max <= 0 {
		max = defaultOutputBytes
	}
	out := outputOut{LastSeq: in.After}
	var stdout, stderr []byte
	rctx := ctx
	if in.WaitMS > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, time.Duration(in.WaitMS)*time.Millisecond)
		defer cancel()
	}
	exit, err := c.ProcessOutput(rctx, in.Sandbox, in.Process, in.After, in.WaitMS > 0, func(f client.OutputFrame) error {
		if len(stdout)+len(stderr) >= max {
			out.More = true
			return errEnough
		}
		if f.Stream == "stderr" {
			stderr = append(stderr, f.Data...)
		} else {
			stdout = append(stdout, f.Data...)
		}
		out.LastSeq = f.Seq
		return nil
	})
	// Waiting ran out, or the budget did: not errors, the answer says
	// what there is.
	if err != nil && !errors.Is(err, errEnough) && (ctx.Err() != nil || rctx.Err() == nil) {
		return outputOut{}, err
	}
	out.Stdout, out.Stderr = string(stdout), string(stderr)
	if exit != nil {
		out.Exit = exit
		return out, nil
	}
	// The stream says how it ended only when following it to the end:
	// ask the list.
	ps, err := c.Processes(ctx, in.Sandbox)
	if err != nil {
		return outputOut{}, err
	}
	for _, p := range ps {
		if p.ID == in.Process {
			out.Running, out.Exit = p.Running, p.Exit
			return out, nil
		}
	}
	return outputOut{}, rung.Errorf(rung.ErrNotFound, "process %s not found", in.Process)
}
