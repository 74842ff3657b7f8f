// Package router decides which tier runs an exec and says why. It is a
// pure decision: it does no I/O and runs nothing.
package router

import (
	"fmt"

	"rung.dev/rung"
	"rung.dev/rung/shell"
)

// Checker decides whether a script can run faithfully in the isolate tier
// and returns it parsed, or says why not. *shell.Shell implements it.
type Checker interface {
	CheckProgram(req shell.CheckRequest) (*shell.Program, error)
}

// Request is what the router decides on.
type Request struct {
	Script  string
	Backend rung.Backend // requested backend; "" means auto
	// Dir, Env and LookPath are the exec's context, as the check takes
	// them (see shell.CheckRequest).
	Dir      string
	Env      map[string]string
	LookPath func(name string) string
	// ContainerAvailable says whether this server can run the container
	// tier for the sandbox now.
	ContainerAvailable bool
	// PTY says the exec runs on a pseudo-terminal, which only the
	// container tier has.
	PTY bool
	// LiveStdin says the exec's stdin arrives while it runs from a
	// client that reads the output meanwhile (the E2B SDK's stdin
	// commands), not whole before it starts.
	LiveStdin bool
	// Login says the script is a login shell's command (see
	// shell.CheckRequest.Login).
	Login bool
}

// Decision is the router's answer. When Err is non-nil the exec must not
// run: Err says why (wrapping rung.ErrUnavailable when the only faithful
// tier is missing, rung.ErrInvalid for a bad request).
type Decision struct {
	Backend rung.Backend
	Reason  string // why, in words, for the journal and the result
	// Class is Reason's class, one of a fixed few (ClassChecked, ...):
	// what metrics count by, where Reason is free text.
	Class string
	Err   error
	// Program is the script as the check parsed and admitted it, for
	// the isolate tier to run without parsing it again; nil unless auto
	// chose the isolate tier. An exec run from it stops at a refusal at
	// run time, so the caller can run it in the container instead.
	Program *shell.Program
	// Login is what the isolate tier runs a login shell's startup files
	// from (shell.Request.Login), for a Request.Login exec it runs; the
	// caller sets it, as reading it is I/O.
	Login *shell.Login
}

// The reason classes of a [Decision]: a bounded set, unlike its Reason.
const (
	ClassChecked     = "checked"     // auto: the isolate tier's check admitted every command
	ClassUnsupported = "unsupported" // auto: the check found something the isolate tier cannot run faithfully
	ClassRequested   = "requested"   // the caller asked for the backend
	// ClassFallThrough is set by the caller, not by Route: an auto exec
	// the isolate tier refused at run time, before any effect, ran in
	// the container instead.
	ClassFallThrough = "fallthrough"
	// ClassUser is set by the caller too: an auto exec as a user other
	// than the sandbox's, which only the container tier switches to.
	ClassUser    = "user"
	ClassInvalid = "invalid" // an unknown backend: nothing runs
	// ClassPTY: the exec runs on a pseudo-terminal, which only the
	// container tier has.
	ClassPTY = "pty"
	// ClassLiveStdin: auto, the exec reads a live stdin (see
	// liveStdinReason).
	ClassLiveStdin = "live_stdin"
)

// liveStdinReason is the reason an auto exec with a live stdin goes to the
// container tier when there is one. The isolate tier's tools buffer their
// output until they end (the final output is bash's and GNU's, which the
// differential tests check), where cat, or a program that flushes, answers
// each line as it is typed: a client reading while it types would see
// nothing. Without the container tier the isolate tier runs it (the same
// final output, later).
const liveStdinReason = "reads a live stdin: the isolate tier's tools answer only when they end, not as input arrives"

// ptyReason is a PTY exec's reason for the container tier.
const ptyReason = "runs on a pseudo-terminal: the isolate tier has no terminal"

// Route picks the tier for req. The isolate tier runs a script only when
// isolate.Check accepts it; anything else goes to the container tier, and
// when that is unavailable the exec fails naming what the isolate tier
// cannot run. It never picks a tier that would fake a result.
func Route(req Request, isolate Checker) Decision {
	if req.PTY {
		return routePTY(req)
	}
	switch req.Backend {
	case "", rung.BackendAuto:
		if req.LiveStdin && req.ContainerAvailable {
			return Decision{Backend: rung.BackendContainer, Reason: liveStdinReason, Class: ClassLiveStdin}
		}
		p, err := isolate.CheckProgram(shell.CheckRequest{Script: req.Script, Dir: req.Dir, Env: req.Env, LookPath: req.LookPath, Login: req.Login})
		if err == nil {
			return Decision{Backend: rung.BackendIsolate, Reason: "isolate tier runs every command of this script", Class: ClassChecked, Program: p}
		}
		if !req.ContainerAvailable {
			return Decision{Backend: rung.BackendContainer, Reason: "isolate tier cannot run it: " + err.Error(), Class: ClassUnsupported,
				Err: rung.Errorf(rung.ErrUnavailable, "isolate tier cannot run this faithfully (%v) and the container tier is not available on this server", err)}
		}
		return Decision{Backend: rung.BackendContainer, Reason: "isolate tier cannot run it: " + err.Error(), Class: ClassUnsupported}
	case rung.BackendIsolate:
		// Explicitly requested: the shell itself refuses, at run time,
		// whatever it cannot do faithfully, so the caller sees the exact
		// unsupported command in the result.
		return Decision{Backend: rung.BackendIsolate, Reason: "requested", Class: ClassRequested}
	case rung.BackendContainer:
		if !req.ContainerAvailable {
			return Decision{Backend: rung.BackendContainer, Reason: "requested", Class: ClassRequested,
				Err: rung.Errorf(rung.ErrUnavailable, "container tier not available on this server")}
		}
		return Decision{Backend: rung.BackendContainer, Reason: "requested", Class: ClassRequested}
	}
	return Decision{Reason: "invalid backend", Class: ClassInvalid, Err: rung.Errorf(rung.ErrInvalid, "unknown backend %q (want auto, isolate or container)", req.Backend)}
}

// routePTY sends a PTY exec to the container tier, the only one with
// terminals: auto says why, isolate is refused.
func routePTY(req Request) Decision {
	switch req.Backend {
	case "", rung.BackendAuto, rung.BackendContainer:
		d := Decision{Backend: rung.BackendContainer, Reason: ptyReason, Class: ClassPTY}
		if req.Backend == rung.BackendContainer {
			d.Reason, d.Class = "requested", ClassRequested
		}
		if !req.ContainerAvailable {
			d.Err = rung.Errorf(rung.ErrUnavailable, "a PTY exec needs the container tier (the isolate tier has no terminal), and it is not available on this server")
		}
		return d
	case rung.BackendIsolate:
		return Decision{Backend: rung.BackendIsolate, Reason: "requested", Class: ClassRequested,
			Err: rung.Errorf(rung.ErrInvalid, "backend isolate has no terminal: a PTY exec runs in the container tier (use backend auto or container)")}
	}
	return Decision{Reason: "invalid backend", Class: ClassInvalid, Err: rung.Errorf(rung.ErrInvalid, "unknown backend %q (want auto, isolate or container)", req.Backend)}
}

// String returns the decision for logs.
func (d Decision) String() string { return fmt.Sprintf("%s (%s)", d.Backend, d.Reason) }
