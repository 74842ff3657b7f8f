package api

import (
	"cmp"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/wire"
)

// The API's bodies are package wire's, shared with the client; these
// names are the handlers'.
type (
	Sandbox              = wire.Sandbox
	CreateSandboxRequest = wire.CreateSandboxRequest
	UpdateSandboxRequest = wire.UpdateSandboxRequest
	ExecRequest          = wire.ExecRequest
	ExecResult           = wire.ExecResult
	Frame                = wire.Frame
	Event                = wire.Event
	MkdirRequest         = wire.MkdirRequest
	MoveRequest          = wire.MoveRequest
	TenantRequest        = wire.TenantRequest
	TokenRequest         = wire.TokenRequest
	TokenResponse        = wire.TokenResponse
	EffectResponse       = wire.EffectResponse
	ErrorBody            = wire.ErrorBody
	ErrorDetail          = wire.ErrorDetail
	WSInput              = wire.WSInput
	ProcessRequest       = wire.ProcessRequest
	Snapshot             = wire.Snapshot
	SnapshotRequest      = wire.SnapshotRequest
	SnapshotList         = wire.SnapshotList
	PinRequest           = wire.PinRequest
	RestoreRequest       = wire.RestoreRequest
	ForkRequest          = wire.ForkRequest
	ForkResult           = wire.ForkResult
	PauseRequest         = wire.PauseRequest
)

func sandboxOut(sb rung.Sandbox) Sandbox {
	return Sandbox{
		ID: sb.ID, Name: sb.Name, Tenant: sb.Tenant, Labels: sb.Labels, Image: sb.Image, Size: sb.Size,
		Isolation: sb.Isolation, Network: sb.Network, User: cmp.Or(sb.User, "root"), State: sb.State,
		IdleTimeoutMS: sb.IdleTimeout.Milliseconds(), TTLMS: sb.TTL.Milliseconds(), CreatedAt: sb.CreatedAt, UpdatedAt: sb.UpdatedAt,
		Execs: sb.Execs,
	}
}

func resultOut(r rung.ExecResult) ExecResult {
	return ExecResult{ExecID: r.ExecID, ExitCode: r.ExitCode, ExitReason: r.ExitReason, Signal: r.Signal, Limit: r.Limit,
		Stdout: string(r.Stdout), Stderr: string(r.Stderr), Backend: r.Backend, Reason: r.Reason,
		DurationMS: float64(r.Duration.Microseconds()) / 1000, Truncated: r.Truncated}
}

func eventOut(e rung.Event) Event {
	return Event{Seq: e.Seq, Time: e.Time, Type: e.Type, Journal: e.Journal, Data: e.Data}
}

func effectOut(e rung.Effect) wire.Effect {
	return wire.Effect{Sandbox: e.Sandbox, Key: e.Key, Kind: e.Kind, Result: e.Result, Seq: e.Seq, CreatedAt: e.CreatedAt}
}

func tenantOut(t rung.Tenant) wire.Tenant {
	return wire.Tenant{ID: t.ID, CreatedAt: t.CreatedAt}
}

func processOut(p controller.ProcessInfo) wire.Process {
	return wire.Process{ID: p.ID, Pid: p.Pid, Argv: p.Argv, Started: p.Started, Running: p.Running, Exit: exitOut(p.Exit),
		FirstSeq: p.FirstSeq, LastSeq: p.LastSeq}
}

func exitOut(e *controller.ProcessExit) *wire.Exit {
	if e == nil {
		return nil
	}
	return &wire.Exit{Code: e.Code, Signal: e.Signal, Reason: e.Reason, Error: e.Error, Truncated: e.Truncated}
}

func outputFrameOut(f controller.OutputFrame) wire.OutputFrame {
	return wire.OutputFrame{Seq: f.Seq, Stream: f.Stream, Data: f.Data, Exit: exitOut(f.Exit)}
}

func fileOut(f controller.FileInfo) wire.FileInfo {
	return wire.FileInfo{Path: f.Path, Name: f.Name, Type: f.Type, Size: f.Size, Mode: f.Mode, ModTime: f.ModTime, Target: f.Target}
}
