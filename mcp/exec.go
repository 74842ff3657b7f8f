package mcp

import (
	"context"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// The exec tool and readiness.

// defaultOutputBytes is how much of each of an exec's stdout and stderr
// the tool returns unless asked for more: about 8,000 tokens, enough for
// a test run's summary, small enough not to flood a model's context.
const defaultOutputBytes = 32 << 10

// maxOutputBytes bounds max_output_bytes (the API's own output limit is
// 16 MiB).
const maxOutputBytes = 1 << 20

type execIn struct {
	Sandbox string            `json:"sandbox" jsonschema:"the sandbox's id (sbx_...) or name"`
	Command string            `json:"command" jsonschema:"a bash command line: pipes, &&, redirections, loops and globs all work; it starts in /workspace unless cwd says otherwise"`
	Backend string            `json:"backend,omitempty" jsonschema:"where to run it: auto (the default: in-process when rung's shell runs it faithfully, else in the container), isolate (in-process only) or container (always in the sandbox's Linux container)"`
	Cwd     string            `json:"cwd,omitempty" jsonschema:"working directory (under /workspace or /tmp)"`
	Env     map[string]string `json:"env,omitempty" jsonschema:"extra environment variables"`
	Stdin   string            `json:"stdin,omitempty" jsonschema:"text fed to the command's standard input"`
	User    string            `json:"user,omitempty" jsonschema:"another user of the image to run as (e.g. root); runs in the container"`
	// TimeoutMS bounds the command's wall time.
	TimeoutMS      int64 `json:"timeout_ms,omitempty" jsonschema:"wall-time limit in milliseconds (default 10 minutes); a command still running then is killed (exit_reason timeout). For servers, use process_start instead"`
	MaxOutputBytes int   `json:"max_output_bytes,omitempty" jsonschema:"how much of stdout, and of stderr, to return (default 32768, at most 1048576); past it the middle is cut out and a note says so"`
}

type execOut struct {
	ExitCode   int     `json:"exit_code"`
	ExitReason string  `json:"exit_reason" jsonschema:"how it ended: exit, signal, oom, timeout, output_limit, canceled or start_failed"`
	Signal     string  `json:"signal,omitempty"`
	Limit      string  `json:"limit,omitempty" jsonschema:"the rung limit that ended it, if one did"`
	Stdout     string  `json:"stdout"`
	Stderr     string  `json:"stderr"`
	Backend    string  `json:"backend" jsonschema:"where it ran: isolate (in-process) or container"`
	Reason     string  `json:"reason" jsonschema:"why it ran there"`
	DurationMS float64 `json:"duration_ms"`
	ExecID     string  `json:"exec_id"`
	Truncated  bool    `json:"truncated,omitempty" jsonschema:"output was cut: see note"`
	Note       string  `json:"note,omitempty"`
}

type readyIn struct {
	Sandbox    string `json:"sandbox" jsonschema:"the sandbox's id (sbx_...) or name"`
	Port       int    `json:"port,omitempty" jsonschema:"wait until this TCP port inside the container accepts connections"`
	Command    string `json:"command,omitempty" jsonschema:"or: wait until this command, run in the container every interval_ms, exits 0"`
	TimeoutMS  int64  `json:"timeout_ms,omitempty" jsonschema:"give up after this many milliseconds (default 30000) with a timeout error"`
	IntervalMS int64  `json:"interval_ms,omitempty" jsonschema:"with command: milliseconds between runs (default 250)"`
}

type readyOut struct {
	Ready    bool  `json:"ready"`
	WaitedMS int64 `json:"waited_ms"`
}

var backends = []string{string(rung.BackendAuto), string(rung.BackendIsolate), string(rung.BackendContainer)}

func (t *tools) addExecTools(s *sdk.Server) {
	add(t, s, spec{name: "exec", title: "Run a command",
		desc: "Run a bash command line in a sandbox and wait for it to end. Returns exit_code, exit_reason, stdout, stderr, and " +
			"backend and reason: where it ran and why (file and text commands such as ls, cat, grep, sed, find run in-process in " +
			"microseconds; python3, node, npm, make, pip... run in the sandbox's container, which starts on first use). A non-zero " +
			"exit code is a result, not an error. Long output is cut in the middle with a note. For servers and other long-running " +
			"commands use process_start.",
		schema: []schemaRule{oneOf("backend", backends...), nonEmpty("command"), atLeast("timeout_ms", 1), between("max_output_bytes", 1, maxOutputBytes)}},
		func(ctx context.Context, c *client.Client, in execIn) (execOut, error) {
			res, err := c.Exec(ctx, in.Sandbox, client.ExecRequest{Command: in.Command, Env: in.Env, Cwd: in.Cwd, Stdin: in.Stdin,
				Backend: rung.Backend(in.Backend), User: in.User, TimeoutMS: in.TimeoutMS})
			if err != nil {
				return execOut{}, err
			}
			return execResult(res, in.MaxOutputBytes), nil
		})
	add(t, s, spec{name: "wait_ready", title: "Wait until ready", readOnly: true,
		desc: "Wait until a sandbox is ready: a TCP port inside its container accepts connections (a server started with " +
			"process_start is up), or a command run in the container every interval_ms exits 0. Give port or command. Fails with " +
			"a timeout error after timeout_ms, naming the last attempt.",
		schema: []schemaRule{between("port", 1, 65535), between("timeout_ms", 1, 3_600_000), between("interval_ms", 10, 60_000)}},
		func(ctx context.Context, c *client.Client, in readyIn) (readyOut, error) {
			timeout := 30 * time.Second
			if in.TimeoutMS > 0 {
				timeout = time.Duration(in.TimeoutMS) * time.Millisecond
			}
			start := time.Now()
			var err error
			switch {
			case (in.Port != 0) == (in.Command != ""):
				return readyOut{}, rung.Errorf(rung.ErrInvalid, "give either port or command")
			case in.Port != 0:
				err = c.WaitPort(ctx, in.Sandbox, in.Port, timeout)
			default:
				interval := 250 * time.Millisecond
				if in.IntervalMS > 0 {
					interval = time.Duration(in.IntervalMS) * time.Millisecond
				}
				err = c.WaitCommand(ctx, in.Sandbox, in.Command, interval, timeout)
			}
			return readyOut{Ready: err == nil, WaitedMS: time.Since(start).Milliseconds()}, err
		})
}

// execResult is res as the exec tool returns it, each stream cut to max
// bytes (0: the default).
func execResult(res client.ExecResult, max int) execOut {
	if max <= 0 {
		max = defaultOutputBytes
	}
	out := execOut{ExitCode: res.ExitCode, ExitReason: string(res.ExitReason), Signal: res.Signal, Limit: string(res.Limit),
		Backend: string(res.Backend), Reason: res.Reason, DurationMS: res.DurationMS, ExecID: string(res.ExecID)}
	var cutOut, cutErr int
	out.Stdout, cutOut = cutMiddle(res.Stdout, max)
	out.Stderr, cutErr = cutMiddle(res.Stderr, max)
	switch {
	case cutOut > 0 || cutErr > 0:
		out.Truncated = true
		out.Note = fmt.Sprintf("output cut to its first and last %d bytes per stream (%d bytes of stdout and %d of stderr left out); "+
			"raise max_output_bytes, or redirect the output to a file and read parts of it with file_read or file_search", max, cutOut, cutErr)
	case res.Truncated:
		out.Truncated = true
	}
	if res.Truncated {
		out.Note = joinNote(out.Note, "the command's output passed the server's output limit and it was stopped (exit_reason output_limit)")
	}
	return out
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
