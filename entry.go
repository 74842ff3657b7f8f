package rung

// EntryType is the type of one entry in a sandbox's sequence: a journal
// entry, or an output event (EntryExecOutput). Its values are API: the
// "type" of every entry the journal and events endpoints return, so a
// value is never renamed. Each constant's comment names the controller
// type its data is (package rung.dev/rung/controller) and the JSON object
// it encodes to; docs/API.md lists them for clients.
type EntryType string

// The entry types of execs and their output.
const (
	EntryExecStarted EntryType = "exec.started" // ExecStarted {exec, command, backend, reason}
	EntryExecEnded   EntryType = "exec.ended"   // ExecEnded {exec, exit_code, exit_reason?, ...}
	EntryExecOutput  EntryType = "exec.output"  // ExecOutput {exec, stream, data}; an event, not journaled
	EntryExecLost    EntryType = "exec.lost"    // ExecLost {execs, reason}
)

// The entry types of a sandbox's container and its background processes.
const (
	EntryContainerStarted EntryType = "container.started" // ContainerStarted {image, isolation, start_ms?, warm?}
	EntryContainerStopped EntryType = "container.stopped" // ContainerStopped {reason}: rung stopped it
	EntryContainerExited  EntryType = "container.exited"  // ContainerExited {reason, detail?}: it died
	EntryContainerAdopted EntryType = "container.adopted" // ContainerAdopted {processes, reason}
	EntryProcessStarted   EntryType = "process.started"   // ProcessStarted {argv, process}
	EntryProcessExited    EntryType = "process.exited"    // ProcessExited {argv, exit_code, exit_reason, process, signal?}
	EntryProcessLost      EntryType = "process.lost"      // ProcessLost {argv, process, reason}
)

// The entry types of the file API.
const (
	EntryFileWritten  EntryType = "file.written"  // FileWritten {bytes, mode, path}
	EntryFileMkdir    EntryType = "file.mkdir"    // FileMkdir {path}
	EntryFileMoved    EntryType = "file.moved"    // FileMoved {from, to}
	EntryFileRemoved  EntryType = "file.removed"  // FileRemoved {path, recursive}
	EntryFileUntarred EntryType = "file.untarred" // FileUntarred {entries, path}
)

// EntryEffectDeclared is the entry of a declared external effect; its
// data is EffectDeclared {key, kind}.
const EntryEffectDeclared EntryType = "effect.declared"

// The entry types of a sandbox's lifecycle, snapshots, restores and forks.
const (
	EntrySandboxCreated       EntryType = "sandbox.created"        // SandboxCreated {name, size?, snapshot?, warm?}
	EntrySandboxUpdated       EntryType = "sandbox.updated"        // SandboxUpdated {idle_timeout_ms, labels}
	EntrySandboxIdleStopped   EntryType = "sandbox.idle_stopped"   // SandboxIdleStopped {idle_timeout_ms}
	EntrySandboxExpiryStopped EntryType = "sandbox.expiry_stopped" // SandboxExpiryStopped {labels, ttl_ms}: its TTL stopped it (Expiry.Stop)
	EntrySandboxWorkspaceLost EntryType = "sandbox.workspace_lost" // SandboxWorkspaceLost {reason}
	EntrySandboxQuarantined   EntryType = "sandbox.quarantined"    // SandboxQuarantined {reason}
	EntrySandboxSnapshotted   EntryType = "sandbox.snapshotted"    // SandboxSnapshotted {consistency, name, size_bytes, snapshot}
	EntrySandboxRestored      EntryType = "sandbox.restored"       // SandboxRestored {name?, recovered?, snapshot}
	EntrySandboxRestoreFailed EntryType = "sandbox.restore_failed" // SandboxRestoreFailed {reason, snapshot}
	EntrySandboxForked        EntryType = "sandbox.forked"         // SandboxForked {parent, snapshot?}: a fork's first entry
	EntrySandboxForkMade      EntryType = "sandbox.fork_made"      // SandboxForkMade {failed, forks}, on the parent
	EntrySandboxForkLost      EntryType = "sandbox.fork_lost"      // SandboxForkLost {reason, sandbox}, on the parent
	EntrySnapshotExpired      EntryType = "snapshot.expired"       // SnapshotExpired {name, snapshot}
	EntrySnapshotLost         EntryType = "snapshot.lost"          // SnapshotLost {name, reason, snapshot}
)

// The entry types of a sandbox's ports and network.
const (
	EntryPortShared       EntryType = "port.shared"        // PortShared {expires, port, share}
	EntryPortShareRevoked EntryType = "port.share_revoked" // PortShareRevoked {port, share}
)

// The entry types of a sandbox's outbound traffic (docs/API.md,
// "Network"): one per connection or request, ended or denied.
const (
	EntryNetworkUpdated   EntryType = "network.updated"   // NetworkUpdated {headers, mode, rules}
	EntryEgressConnection EntryType = "egress.connection" // Egress {host, ip, port, protocol, bytes_in, bytes_out, duration_ms, rule, time}
	EntryEgressRequest    EntryType = "egress.request"    // Egress {method, host, path, status, secret?, ...}
	EntryEgressDenied     EntryType = "egress.denied"     // Egress {host, ip, port, protocol, message, rule?, ...}
)
