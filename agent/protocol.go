// Package agent is the in-container agent and its protocol. The agent is
// the rung binary itself (`rung agent`), bind-mounted read-only into every
// container and run as PID 1: it reaps zombies, forwards signals, and
// serves exec over a unix socket that the host shares with the container,
// so an exec into a running container costs a fork, not a `runc exec`.
//
// The protocol is HTTP/1.1 over the unix socket. POST /v1/exec takes an
// [ExecRequest] and answers with newline-delimited JSON [Frame]s: output
// chunks in order, then one frame with Exit set. GET /v1/health answers
// 200 once the agent serves.
//
// An exec with [ExecRequest].PTY runs on a pseudo-terminal the agent
// opens (/dev/ptmx of the container): the command is a session leader
// with the terminal as its controlling terminal and its stdin, stdout
// and stderr, so its output comes back as one "stdout" stream, as a
// terminal shows it. Its streamed input is then a sequence of JSON
// [Input] objects (bytes for the terminal, or a new size) rather than
// raw bytes.
package agent

// SocketName is the agent's socket file inside the shared directory.
const SocketName = "agent.sock"

// ExecRequest is one command to run inside the container.
type ExecRequest struct {
	// Argv is run directly when set; otherwise Command runs under
	// Shell -c (default /bin/sh).
	Argv    []string `json:"argv,omitempty"`
	Command string   `json:"command,omitempty"`
	Shell   string   `json:"shell,omitempty"`
	Env     []string `json:"env,omitempty"` // NAME=value; replaces the agent's environment
	Dir     string   `json:"dir,omitempty"` // default /workspace
	// User is who the command runs as; nil is the agent's own identity
	// (root). The host resolves names against the image's accounts.
	User  *Credential `json:"user,omitempty"`
	Stdin []byte      `json:"stdin,omitempty"`
	// StdinStream: the request body goes on after this JSON object with
	// the command's stdin, streamed while the command runs (a REPL, a
	// pipe from a WebSocket); its end closes the command's stdin. Stdin
	// must then be empty.
	StdinStream bool `json:"stdin_stream,omitempty"`
	// TimeoutMS kills the command's process group after this many
	// milliseconds. Zero means no timeout (the host's context still
	// bounds it: closing the connection kills the command).
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// MaxOutput truncates stdout plus stderr after this many bytes; the
	// command is killed and the exit frame says Truncated. Zero: 16 MiB.
	MaxOutput int64 `json:"max_output,omitempty"`
	// PTY, when set, runs the command on a new pseudo-terminal of this
	// size (see the package doc): Stdin is written to the terminal as
	// typed input, and a streamed input is [Input] messages. An
	// environment without TERM gets TERM=xterm-256color.
	PTY *TermSize `json:"pty,omitempty"`
}

// TermSize is a terminal's size in character cells; both are at least 1.
type TermSize struct {
	Cols uint16 `json:"cols"`
	Rows uint16 `json:"rows"`
}

// Input is one message of a PTY exec's streamed input: Data goes to the
// terminal as typed (0x03 is ^C, which the terminal turns into SIGINT
// for the foreground process group), then Resize, when set, changes its
// size (the foreground process group gets SIGWINCH).
type Input struct {
	Data   []byte    `json:"data,omitempty"`
	Resize *TermSize `json:"resize,omitempty"`
}

// Credential is a uid, gid and supplementary groups a command runs with.
// The agent, PID 1 as root, sets them in the child before it executes the
// command (setgroups, setgid, setuid); the capabilities of root do not
// follow a non-zero uid.
type Credential struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

// Frame is one line of an exec's response stream.
type Frame struct {
	Seq    int64  `json:"seq"`
	Stream string `json:"stream,omitempty"` // "stdout" or "stderr"
	Data   []byte `json:"data,omitempty"`
	Exit   *Exit  `json:"exit,omitempty"` // set on the last frame only
}

// Exit says how a command ended.
type Exit struct {
	Code      int    `json:"code"`             // exit status, or 128+signal
	Signal    string `json:"signal,omitempty"` // "SIGKILL" when killed by a signal
	Reason    string `json:"reason"`           // "exit", "signal", "oom" (set by the host), "timeout", "output_limit", "canceled", "start_failed"
	Error     string `json:"error,omitempty"`  // why it could not start
	Truncated bool   `json:"truncated,omitempty"`
}

// DefaultMaxOutput is [ExecRequest.MaxOutput]'s default.
const DefaultMaxOutput = 16 << 20
