package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/wire"
)

// StartContainer starts the sandbox's container now (it otherwise starts
// on the first exec that needs it).
func (c *Client) StartContainer(ctx context.Context, id string) (Sandbox, error) {
	var out Sandbox
	err := c.do(ctx, "POST", sbPath(id, "/start"), nil, nil, &out)
	return out, err
}

// StopContainer stops the sandbox's container; files stay.
func (c *Client) StopContainer(ctx context.Context, id string) error {
	return c.do(ctx, "POST", sbPath(id, "/stop"), nil, nil, nil)
}

// Background processes' bodies (package wire).
type (
	// ProcessRequest is a background process to start: a command line
	// (run under the image's shell) or an argv.
	ProcessRequest = wire.ProcessRequest
	// Process describes a background process.
	Process = wire.Process
	// Exit says how a process ended: Reason is "exit", "signal",
	// "timeout", "oom" or "start_failed".
	Exit = wire.Exit
	// OutputFrame is one chunk of a process's output, or its exit.
	OutputFrame = wire.OutputFrame
)

// StartProcess starts a background process in the sandbox's container.
func (c *Client) StartProcess(ctx context.Context, id string, req ProcessRequest) (Process, error) {
	var out Process
	err := c.do(ctx, "POST", sbPath(id, "/processes"), nil, req, &out)
	return out, err
}

// Processes lists the sandbox's background processes.
func (c *Client) Processes(ctx context.Context, id string) ([]Process, error) {
	var out []Process
	err := c.do(ctx, "GET", sbPath(id, "/processes"), nil, nil, &out)
	return out, err
}

// ProcessOutput calls fn for each output frame after seq after; with
// follow it streams until the process exits and returns its exit. To
// re-attach after a disconnect, pass the last Seq seen.
func (c *Client) ProcessOutput(ctx context.Context, id, pid string, after int64, follow bool, fn func(OutputFrame) error) (*Exit, error) {
	q := url.Values{"after": {strconv.FormatInt(after, 10)}, "follow": {strconv.FormatBool(follow)}}
	req, err := c.newRequest(ctx, "GET", sbPath(id, "/processes/", url.PathEscape(pid), "/output"), q, nil, "")
	if err != nil {
		return nil, err
	}
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var f OutputFrame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			return nil, fmt.Errorf("process output: bad line: %w", err)
		}
		if f.Exit != nil {
			return f.Exit, nil
		}
		if err := fn(f); err != nil {
			return nil, err
		}
	}
	return nil, sc.Err()
}

// SignalProcess sends a signal ("SIGTERM", "SIGKILL", ...) to a process.
func (c *Client) SignalProcess(ctx context.Context, id, pid, signal string) error {
	return c.do(ctx, "POST", sbPath(id, "/processes/", url.PathEscape(pid), "/signal"), url.Values{"signal": {signal}}, nil, nil)
}

// ResizeProcess sets the terminal size of a process started with a PTY
// (ProcessRequest.PTY); the process gets SIGWINCH.
func (c *Client) ResizeProcess(ctx context.Context, id, pid string, size rung.TermSize) error {
	return c.do(ctx, "POST", sbPath(id, "/processes/", url.PathEscape(pid), "/resize"), nil, size, nil)
}

// WriteProcessStdin writes data to a process's stdin, closing it after
// when closeAfter is set.
func (c *Client) WriteProcessStdin(ctx context.Context, id, pid string, data []byte, closeAfter bool) error {
	q := url.Values{"close": {strconv.FormatBool(closeAfter)}}
	req, err := c.newRequest(ctx, "POST", sbPath(id, "/processes/", url.PathEscape(pid), "/stdin"), q, bytes.NewReader(data), "application/octet-stream")
	if err != nil {
		return err
	}
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// WaitPort waits until a TCP port inside the sandbox accepts connections
// (rung.ErrTimeout after timeout).
func (c *Client) WaitPort(ctx context.Context, id string, port int, timeout time.Duration) error {
	q := url.Values{"port": {strconv.Itoa(port)}, "timeout_ms": {strconv.FormatInt(timeout.Milliseconds(), 10)}}
	return c.do(ctx, "GET", sbPath(id, "/ready"), q, nil, nil)
}

// WaitCommand waits until command, run in the sandbox's container every
// interval, exits 0 (rung.ErrTimeout after timeout, naming the last
// attempt's exit code and stderr). Each run is a journaled exec.
func (c *Client) WaitCommand(ctx context.Context, id, command string, interval, timeout time.Duration) error {
	q := url.Values{"command": {command}, "interval_ms": {strconv.FormatInt(interval.Milliseconds(), 10)},
		"timeout_ms": {strconv.FormatInt(timeout.Milliseconds(), 10)}}
	return c.do(ctx, "GET", sbPath(id, "/ready"), q, nil, nil)
}
