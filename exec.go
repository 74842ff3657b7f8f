package rung

import "time"

// ExecRequest is one shell command line to run in a sandbox.
type ExecRequest struct {
	Command string            `json:"command"`
	Env     map[string]string `json:"env,omitempty"`
	Dir     string            `json:"cwd,omitempty"` // absolute sandbox path; default /workspace
	Stdin   []byte            `json:"stdin,omitempty"`
	Backend Backend           `json:"backend,omitempty"` // default auto
	// User runs the command as another user of the sandbox's image than
	// the sandbox's own ("root" in a base sandbox, whose user is "user").
	// Only the container tier switches users, so an exec as another user
	// runs there. Default the sandbox's user.
	User string `json:"user,omitempty"`
	// Timeout bounds the exec's wall time. Zero means the server default.
	Timeout time.Duration `json:"timeout,omitempty"`
	// PTY, when set, runs the command on a pseudo-terminal of this size:
	// its stdin, stdout and stderr are the terminal, so its output is one
	// stream (stdout), and only the container tier has terminals.
	PTY *TermSize `json:"pty,omitempty"`
	// Login runs the command as a login shell's (bash -l -c): after
	// /etc/profile and the user's ~/.profile (or ~/.bash_profile,
	// ~/.bash_login), so with the PATH and the variables they set. Both
	// tiers do; the isolate tier runs the startup files itself.
	Login bool `json:"login,omitempty"`
}

// TermSize is a terminal's size in character cells.
type TermSize struct {
	Cols int `json:"cols"`
	Rows int `json:"rows"`
}

// MaxTermSide is the largest number of columns or rows a terminal may
// have; the smallest is 1.
const MaxTermSide = 1000

// Check returns an [ErrInvalid] error naming the side that is outside
// 1..[MaxTermSide].
func (t TermSize) Check() error {
	switch {
	case t.Cols < 1 || t.Cols > MaxTermSide:
		return Errorf(ErrInvalid, "terminal cols %d outside 1..%d", t.Cols, MaxTermSide)
	case t.Rows < 1 || t.Rows > MaxTermSide:
		return Errorf(ErrInvalid, "terminal rows %d outside 1..%d", t.Rows, MaxTermSide)
	}
	return nil
}

// ExecResult is what an exec produced. A non-zero ExitCode is a result,
// not an error.
type ExecResult struct {
	ExecID   ExecID `json:"exec_id"`
	ExitCode int    `json:"exit_code"`
	// ExitReason says how the command ended; see [ExitReason].
	ExitReason ExitReason `json:"exit_reason"`
	// Signal names the signal that ended the command ("SIGKILL") when
	// ExitReason is ExitReasonSignal or ExitReasonOOM; otherwise "".
	Signal string `json:"signal,omitempty"`
	// Limit names the rung limit that ended the exec ([LimitWallTime],
	// [LimitOutputBytes], "commands", ...), or "". Then ExitCode is
	// [ExitLimit].
	Limit     Limit         `json:"limit,omitempty"`
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

// ExitReason says how an exec or a background process ended. Both tiers
// report one; the isolate tier only ever reports ExitReasonExit,
// ExitReasonTimeout, ExitReasonOutputLimit and ExitReasonCanceled.
type ExitReason string

// The exit reasons. The rung limits of [ExecResult.Limit] map to them:
// "wall_time" is ExitReasonTimeout, "output_bytes" ExitReasonOutputLimit,
// and the isolate interpreter's own limits ("commands", "loop_iterations",
// "depth", "string_bytes", "array_elems", "write_bytes", and the per-exec
// budgets "cpu_time" and "memory_bytes") are ExitReasonExit: the
// interpreter stops the script with status [ExitLimit], as bash stops at
// its own limits (FUNCNEST), rather than anything killing it. An exec the
// daemon cannot admit for want of isolate memory ("daemon_memory_bytes") is
// refused before it starts, with no result.
const (
	ExitReasonExit        ExitReason = "exit"         // the command exited; ExitCode is its status
	ExitReasonSignal      ExitReason = "signal"       // a signal killed it (Signal names it), not one of rung's limits
	ExitReasonOOM         ExitReason = "oom"          // the kernel's OOM killer: the sandbox's memory limit
	ExitReasonTimeout     ExitReason = "timeout"      // the exec's wall-time limit
	ExitReasonOutputLimit ExitReason = "output_limit" // the exec's output limit
	ExitReasonCanceled    ExitReason = "canceled"     // the caller went away, or the sandbox was deleted or stopped
	ExitReasonStartFailed ExitReason = "start_failed" // the command could not start (no such program, not executable)
)
