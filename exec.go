package rung

import "time"

// ExecRequest is one shell command line to run in a sandbox.
type ExecRequest struct {
	Command string            `json:"command"`
	Env     map[string]string `json:"env,omitempty"`
	Dir     string            `json:"cwd,omitempty"` // absolute sandbox path; default /workspace
	Stdin   []byte            `json:"stdin,omitempty"`
	Backend Backend           `json:"backend,omitempty"` // default auto
	// Timeout bounds the exec's wall time. Zero means the server default.
	Timeout time.Duration `json:"timeout,omitempty"`
}

// ExecResult is what an exec produced. A non-zero ExitCode is a result,
// not an error.
type ExecResult struct {
	ExecID    ExecID        `json:"exec_id"`
	ExitCode  int           `json:"exit_code"`
	Stdout    []byte        `json:"stdout"`
	Stderr    []byte        `json:"stderr"`
	Backend   Backend       `json:"backend"`
	Reason    string        `json:"reason"` // why the router chose Backend
	Duration  time.Duration `json:"duration"`
	Truncated bool          `json:"truncated,omitempty"` // output hit the output limit
}

// ExitLimit is the exit code of an exec ended by a limit (wall time,
// output, command count, ...), with a message on stderr naming the limit.
const ExitLimit = 126
