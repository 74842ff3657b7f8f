package shell

import (
	"context"
	"errors"
	"io"

	"rung.dev/rung/storage"
)

// Config configures a [Shell]. Only FS is required.
type Config struct {
	FS       storage.FS      // the sandbox's file view; required
	Tools    map[string]Tool // commands beyond the builtins; nil means builtins only
	Limits   Limits          // zero fields take the defaults documented on Limits
	Hostname string          // $HOSTNAME; default "rung"
	User     string          // $USER; default "root"
}

// Limits bound one exec. A breach ends the exec with exit status 126 and a
// message on stderr naming the limit. Zero fields mean the default.
type Limits struct {
	Commands       int64 // simple commands executed; default 1,000,000
	LoopIterations int64 // loop iterations in all loops together; default 1,000,000
	OutputBytes    int64 // stdout plus stderr bytes; default 16 MiB
	StringBytes    int64 // longest variable value or expansion; default 16 MiB
	ArrayElems     int64 // largest array; default 1,000,000
	Depth          int   // function, source and eval nesting; default 1,000
	WriteBytes     int64 // bytes written to files through the exec; default 1 GiB
}

// Request is one command line to run.
type Request struct {
	Script string
	Dir    string            // working directory, an absolute sandbox path; default /workspace
	Env    map[string]string // exported on top of the default environment
	Stdin  io.Reader         // nil means empty
	Stdout io.Writer         // nil means discard
	Stderr io.Writer         // nil means discard
}

// Result is how an exec ended. A non-zero ExitCode is not an error.
type Result struct {
	ExitCode int
	// Unsupported is non-nil (wrapping ErrUnsupported) when the exec
	// reached something this tier cannot do faithfully.
	Unsupported error
	// Limit names the limit that ended the exec ("wall_time",
	// "output_bytes", ...), or "" when none did. Then ExitCode is 126.
	Limit string
}

// Shell runs scripts against one sandbox's file view. It is safe for
// concurrent use: each Run has its own interpreter state.
type Shell struct {
	cfg Config
}

// New returns a Shell for cfg.
func New(cfg Config) *Shell { return &Shell{cfg: cfg} }

// Run runs req.Script to completion, or until ctx is done (then the
// result's Limit is "wall_time"). It never panics on any input: a panic in
// a tool is recovered and reported as exit status 126...
func (s *Shell) Run(ctx context.Context, req Request) Result {
	return Result{ExitCode: 126, Unsupported: errors.New("interpreter not written yet")}
}

// Check reports, without running anything, whether script can run here
// faithfully: nil, or an error wrapping [ErrUnsupported] that names the
// reason (unknown command, unsupported flag, a path outside /workspace
// and /tmp, a feature the interpreter lacks). A syntax error wraps
// rung.ErrInvalid.
func (s *Shell) Check(script string) error {
	return errors.New("interpreter not written yet")
}
