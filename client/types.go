package client

import "rung.dev/rung/wire"

// The API's bodies, shared with the server (package wire).
type (
	// Sandbox is a sandbox as the API returns it. Durations are
	// milliseconds.
	Sandbox = wire.Sandbox
	// CreateRequest describes a new sandbox; zero fields take the
	// server's defaults.
	CreateRequest = wire.CreateSandboxRequest
	// UpdateRequest changes a sandbox; nil fields stay.
	UpdateRequest = wire.UpdateSandboxRequest
	// ExecRequest is one command line to run.
	ExecRequest = wire.ExecRequest
	// ExecResult is how an exec ended. A non-zero ExitCode is not an
	// error. ExitReason says how the command ended (exit, signal, oom,
	// timeout, output_limit, canceled, start_failed; see
	// [rung.ExitReason]); Signal names the signal for signal and oom;
	// Limit names the rung limit that ended it ("wall_time",
	// "output_bytes", ...). Reason says why Backend was chosen.
	ExecResult = wire.ExecResult
	// FileInfo describes a file in a sandbox.
	FileInfo = wire.FileInfo
	// Event is a journal entry or an output event.
	Event = wire.Event
	// Effect is a declared external effect.
	Effect = wire.Effect
	// Tenant is a customer of the server.
	Tenant = wire.Tenant
	// Token is a new API token; Token is shown only once.
	Token = wire.TokenResponse
)
