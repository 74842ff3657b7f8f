// Package mcp is rung's Model Context Protocol server: the tools and
// resources an agent uses to drive sandboxes (create them, run commands,
// read, write, edit and search files, run background processes, take
// snapshots and forks, share ports, read the journal). It speaks MCP
// through the official Go SDK (github.com/modelcontextprotocol/go-sdk,
// behind this package alone) and reaches rung only through the Go SDK
// [client.Client], that is through the HTTP API with the caller's token:
// a tool can do nothing that token could not do over /v1, and a tenant's
// session sees only its own sandboxes.
//
// Two ways in: [ServeStdio] runs one session over a pipe (`rung mcp`,
// for an agent on the same machine as its client), and [Handler] serves
// Streamable HTTP sessions (`/mcp` on `rung serve`), each request
// authenticated by its bearer token.
//
// A tool's failure is an MCP tool error (a result with isError set)
// whose text starts with rung's wire code ("not_found: sandbox x not
// found"), never a failed session; arguments that do not match a tool's
// input schema are refused the same way, naming what is wrong.
package mcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"runtime/debug"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// instructions is what a client may show the model about the server as a
// whole.
const instructions = `rung gives you sandboxes: Linux computers with a persistent /workspace.
Create one with sandbox_create (or reuse one from sandbox_list), then work in it: exec runs a bash
command line (simple file and text commands run in-process in microseconds; the rest, such as python3,
npm or make, runs in the sandbox's container, which starts on first use); file_read, file_write,
file_edit, file_list, file_search, file_move and file_delete work on its files (paths are absolute
under /workspace or /tmp, or relative to /workspace). Long-running servers go in process_start, with
wait_ready for their port and preview_url for a URL to them. snapshot_create saves the sandbox's
state, snapshot_rollback returns to it and fork copies it. journal says what happened in a sandbox.
Every tool takes the sandbox's id (sbx_...) or name. Errors start with a code: not_found,
invalid_argument, conflict, limit_exceeded, permission_denied, unavailable, timeout, ...`

// newServer returns an SDK server with every tool and resource, whose
// handlers get their client from clientFor.
func newServer(log *slog.Logger, clientFor func(*sdk.RequestExtra) (*client.Client, error)) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "rung", Title: "rung sandboxes", Version: version()}, &sdk.ServerOptions{
		Instructions: instructions,
		Logger:       log,
		// No logging capability: the server sends the client nothing but
		// answers.
		Capabilities: &sdk.ServerCapabilities{},
	})
	t := &tools{log: log, clientFor: clientFor}
	t.addSandboxTools(s)
	t.addExecTools(s)
	t.addProcessTools(s)
	t.addFileTools(s)
	t.addSnapshotTools(s)
	t.addResources(s)
	return s
}

// version is the binary's module version, "(devel)" for a local build.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return cmp.Or(bi.Main.Version, "(devel)")
	}
	return "(devel)"
}

// StdioConfig configures [ServeStdio]; its zero value serves the
// process's stdin and stdout without logging.
type StdioConfig struct {
	In     io.ReadCloser  // the client's messages, one JSON-RPC message a line; default os.Stdin
	Out    io.WriteCloser // the answers; default os.Stdout
	Logger *slog.Logger   // nil discards
}

// ServeStdio serves one MCP session on cfg's pipes until the client
// closes its end or ctx is done, calling rung with c. It returns nil
// when the client hung up.
func ServeStdio(ctx context.Context, c *client.Client, cfg StdioConfig) error {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &sdk.IOTransport{Reader: cfg.In, Writer: cfg.Out}
	if t.Reader == nil {
		t.Reader = os.Stdin
	}
	if t.Writer == nil {
		t.Writer = os.Stdout
	}
	s := newServer(log, func(*sdk.RequestExtra) (*client.Client, error) { return c, nil })
	err := s.Run(ctx, t)
	if errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil
	}
	return err
}

// tools holds what every tool handler needs.
type tools struct {
	log       *slog.Logger
	clientFor func(*sdk.RequestExtra) (*client.Client, error)
}

// handler is a tool's work: its typed input in, its typed output or an
// error out (classified as rung's errors are: see [toolError]).
type handler[In, Out any] func(ctx context.Context, c *client.Client, in In) (Out, error)

// spec describes a tool.
type spec struct {
	name, title, desc string
	// schema adjusts the input schema inferred from the input type
	// (enums, bounds); may be nil.
	schema []schemaRule
	// readOnly marks tools that change nothing; destructive ones that
	// may lose data (delete, rollback).
	readOnly, destructive bool
}

// add registers a tool: its input schema comes from In (field tags and
// sp.schema), its output schema from Out unless Out is any, and its
// errors become tool errors.
func add[In, Out any](t *tools, s *sdk.Server, sp spec, h handler[In, Out]) {
	ann := &sdk.ToolAnnotations{Title: sp.title, ReadOnlyHint: sp.readOnly, IdempotentHint: sp.readOnly}
	if !sp.readOnly {
		ann.DestructiveHint = &sp.destructive
	}
	open := false
	ann.OpenWorldHint = &open
	tool := &sdk.Tool{Name: sp.name, Title: sp.title, Description: sp.desc, InputSchema: inputSchema[In](sp.schema), Annotations: ann}
	sdk.AddTool(s, tool, func(ctx context.Context, req *sdk.CallToolRequest, in In) (_ *sdk.CallToolResult, out Out, err error) {
		defer func() {
			// A bug in a tool must not end the session: it is one
			// failed call.
			if p := recover(); p != nil {
				t.log.ErrorContext(ctx, "mcp tool panic", "tool", sp.name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				err = &toolError{code: rung.CodeInternal, msg: "internal error in tool " + sp.name}
			}
		}()
		c, err := t.clientFor(req.Extra)
		if err != nil {
			return nil, out, asToolError(err)
		}
		out, err = h(ctx, c, in)
		if err != nil {
			return nil, out, asToolError(err)
		}
		return nil, out, nil
	})
}

// toolError is a failed tool call as the agent reads it: rung's wire
// code, then the message.
type toolError struct {
	code, msg string
}

func (e *toolError) Error() string { return e.code + ": " + e.msg }

// asToolError classifies err: an API error keeps its code and message;
// one of rung's classes made here gets its code; a daemon that cannot be
// reached is unavailable; anything else is internal.
func asToolError(err error) error {
	if ce, ok := errors.AsType[*client.Error](err); ok {
		return &toolError{code: ce.Code, msg: ce.Message}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &toolError{code: rung.CodeTimeout, msg: err.Error()}
	case errors.Is(err, context.Canceled):
		// The client gave up on the call (or the session ended): nobody
		// reads this answer.
		return &toolError{code: rung.CodeUnavailable, msg: "the call was canceled"}
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return &toolError{code: rung.CodeUnavailable, msg: "cannot reach the rung daemon: " + ue.Err.Error()}
	}
	return &toolError{code: rung.Code(err), msg: err.Error()}
}
