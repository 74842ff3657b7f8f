package controller

import (
	"time"

	"rung.dev/rung"
)

// The data of each journal entry and output event, one type per
// [rung.EntryType]. Their JSON is API (docs/API.md, "Journal and events"):
// a tag is never renamed, and TestEntryJSON pins every type's keys.
// Fields are in the order of their JSON names, the order the entries had
// when they were maps, so an entry's bytes did not change either. A field
// with omitempty is absent from one kind of the entry (a pointer where its
// zero value is still written by the other).

// ExecStarted is the data of a [rung.EntryExecStarted] entry.
type ExecStarted struct {
	Backend rung.Backend `json:"backend"`
	Command string       `json:"command"` // clipped to 4 KiB
	Exec    rung.ExecID  `json:"exec"`
	Reason  string       `json:"reason"` // why the router chose Backend
	// PTY is the terminal's size when the exec runs on one, or nil.
	PTY *rung.TermSize `json:"pty,omitempty"`
}

// ExecEnded is the data of a [rung.EntryExecEnded] entry. ExitReason is
// empty only with Error (the exec had no result).
type ExecEnded struct {
	Backend     rung.Backend    `json:"backend"`
	DurationMS  int64           `json:"duration_ms"`
	Error       string          `json:"error,omitempty"` // the error's wire code
	Exec        rung.ExecID     `json:"exec"`
	ExitCode    int             `json:"exit_code"`
	ExitReason  rung.ExitReason `json:"exit_reason,omitempty"`
	Limit       rung.Limit      `json:"limit,omitempty"`
	Reason      string          `json:"reason,omitempty"` // why the exec ran in another tier than exec.started says
	Signal      string          `json:"signal,omitempty"`
	StderrBytes int64           `json:"stderr_bytes"`
	StdoutBytes int64           `json:"stdout_bytes"`
}

// ExecOutput is the data of a [rung.EntryExecOutput] event (not a
// journal entry). Its fields keep the order they always had.
type ExecOutput struct {
	Exec   rung.ExecID `json:"exec"`
	Stream string      `json:"stream"` // "stdout" or "stderr"
	Data   string      `json:"data"`   // up to maxEventData bytes
}

// ExecLost is the data of a [rung.EntryExecLost] entry: the execs a
// restart found in flight.
type ExecLost struct {
	Execs  []rung.ExecID `json:"execs"`
	Reason string        `json:"reason"`
}

// ContainerStarted is the data of a [rung.EntryContainerStarted] entry.
// A container started for the sandbox has StartMS; a warm spare's that
// the sandbox took over has Warm instead.
type ContainerStarted struct {
	Image     string         `json:"image"` // name@digest
	Isolation rung.Isolation `json:"isolation"`
	StartMS   *int64         `json:"start_ms,omitempty"`
	Warm      bool           `json:"warm,omitempty"`
}

// ContainerStopped is the data of a [rung.EntryContainerStopped] entry:
// rung stopped the container ("idle", "stopped", "daemon_stop", ...).
type ContainerStopped struct {
	Reason string `json:"reason"`
}

// ContainerExited is the data of a [rung.EntryContainerExited] entry: the
// container died. Detail says why a restarted daemon could not adopt it
// (Reason "daemon_restart"), else it is absent.
type ContainerExited struct {
	Detail string `json:"detail,omitempty"`
	Reason string `json:"reason"`
}

// ContainerAdopted is the data of a [rung.EntryContainerAdopted] entry.
type ContainerAdopted struct {
	Processes int    `json:"processes"` // the background processes it had
	Reason    string `json:"reason"`
}

// ProcessStarted is the data of a [rung.EntryProcessStarted] entry.
type ProcessStarted struct {
	Argv    []string `json:"argv"` // clipped by clipArgv
	Process string   `json:"process"`
}

// ProcessExited is the data of a [rung.EntryProcessExited] entry.
type ProcessExited struct {
	Argv       []string        `json:"argv"`
	ExitCode   int             `json:"exit_code"`
	ExitReason rung.ExitReason `json:"exit_reason"`
	Process    string          `json:"process"`
	Signal     string          `json:"signal,omitempty"`
}

// ProcessLost is the data of a [rung.EntryProcessLost] entry: how the
// process ended is unknown.
type ProcessLost struct {
	Argv    []string `json:"argv"`
	Process string   `json:"process"`
	Reason  string   `json:"reason"`
}

// FileWritten is the data of a [rung.EntryFileWritten] entry.
type FileWritten struct {
	Bytes int64  `json:"bytes"`
	Mode  string `json:"mode"` // octal, "0644"
	Path  string `json:"path"`
}

// FileMkdir is the data of a [rung.EntryFileMkdir] entry.
type FileMkdir struct {
	Path string `json:"path"`
}

// FileMoved is the data of a [rung.EntryFileMoved] entry.
type FileMoved struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// FileRemoved is the data of a [rung.EntryFileRemoved] entry.
type FileRemoved struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive"`
}

// FileUntarred is the data of a [rung.EntryFileUntarred] entry.
type FileUntarred struct {
	Entries int    `json:"entries"`
	Path    string `json:"path"`
}

// EffectDeclared is the data of a [rung.EntryEffectDeclared] entry.
type EffectDeclared struct {
	Key  rung.EffectKey `json:"key"`
	Kind string         `json:"kind"`
}

// SandboxCreated is the data of a [rung.EntrySandboxCreated] entry. A
// sandbox created empty has Size (and Warm when it took over a warm
// spare); one restored from a snapshot has Snapshot instead.
type SandboxCreated struct {
	Name     string          `json:"name"`
	Size     string          `json:"size,omitempty"` // rung.Size.String
	Snapshot rung.SnapshotID `json:"snapshot,omitempty"`
	Warm     bool            `json:"warm,omitempty"`
}

// SandboxUpdated is the data of a [rung.EntrySandboxUpdated] entry: the
// sandbox's labels and idle timeout after the update.
type SandboxUpdated struct {
	IdleTimeoutMS int64             `json:"idle_timeout_ms"`
	Labels        map[string]string `json:"labels"`
}

// SandboxIdleStopped is the data of a [rung.EntrySandboxIdleStopped] entry.
type SandboxIdleStopped struct {
	IdleTimeoutMS int64 `json:"idle_timeout_ms"`
}

// SandboxExpiryStopped is the data of a [rung.EntrySandboxExpiryStopped]
// entry: the TTL that ran out and the labels the sandbox has after it.
type SandboxExpiryStopped struct {
	Labels map[string]string `json:"labels"`
	TTLMS  int64             `json:"ttl_ms"`
}

// SandboxWorkspaceLost is the data of a [rung.EntrySandboxWorkspaceLost]
// entry.
type SandboxWorkspaceLost struct {
	Reason string `json:"reason"`
}

// SandboxQuarantined is the data of a [rung.EntrySandboxQuarantined] entry.
type SandboxQuarantined struct {
	Reason string `json:"reason"`
}

// SandboxSnapshotted is the data of a [rung.EntrySandboxSnapshotted] entry.
type SandboxSnapshotted struct {
	Consistency string          `json:"consistency"`
	Name        string          `json:"name"`
	SizeBytes   int64           `json:"size_bytes"`
	Snapshot    rung.SnapshotID `json:"snapshot"`
}

// SandboxRestored is the data of a [rung.EntrySandboxRestored] entry. A
// rollback has Name (the snapshot's, "" when it has none); one a restart
// finished recording has Recovered instead.
type SandboxRestored struct {
	Name      *string         `json:"name,omitempty"`
	Recovered bool            `json:"recovered,omitempty"`
	Snapshot  rung.SnapshotID `json:"snapshot"`
}

// SandboxRestoreFailed is the data of a [rung.EntrySandboxRestoreFailed]
// entry.
type SandboxRestoreFailed struct {
	Reason   string          `json:"reason"`
	Snapshot rung.SnapshotID `json:"snapshot"`
}

// SandboxForked is the data of a [rung.EntrySandboxForked] entry, a
// fork's first. Snapshot is set for a fork of a snapshot; Parent is then
// the snapshot's sandbox ("" for an imported one).
type SandboxForked struct {
	Parent   rung.SandboxID  `json:"parent"`
	Snapshot rung.SnapshotID `json:"snapshot,omitempty"`
}

// SandboxForkMade is the data of a [rung.EntrySandboxForkMade] entry, on
// the sandbox forked: the forks made and the wire codes of those that
// failed (null when none).
type SandboxForkMade struct {
	Failed []string `json:"failed"`
	Forks  []string `json:"forks"`
}

// SandboxForkLost is the data of a [rung.EntrySandboxForkLost] entry, on
// the sandbox forked.
type SandboxForkLost struct {
	Reason  string         `json:"reason"`
	Sandbox rung.SandboxID `json:"sandbox"`
}

// SnapshotExpired is the data of a [rung.EntrySnapshotExpired] entry, on
// the snapshot's sandbox.
type SnapshotExpired struct {
	Name     string          `json:"name"`
	Snapshot rung.SnapshotID `json:"snapshot"`
}

// SnapshotLost is the data of a [rung.EntrySnapshotLost] entry, on the
// snapshot's sandbox.
type SnapshotLost struct {
	Name     string          `json:"name"`
	Reason   string          `json:"reason"`
	Snapshot rung.SnapshotID `json:"snapshot"`
}

// PortShared is the data of a [rung.EntryPortShared] entry.
type PortShared struct {
	Expires time.Time `json:"expires"`
	Port    int       `json:"port"`
	Share   string    `json:"share"`
}

// PortShareRevoked is the data of a [rung.EntryPortShareRevoked] entry.
type PortShareRevoked struct {
	Port  int    `json:"port"`
	Share string `json:"share"`
}
