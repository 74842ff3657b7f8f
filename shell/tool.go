package shell

import (
	"context"
	"errors"
	"io"
	"sync/atomic"

	"rung.dev/rung/storage"
)

// Tool is one command implemented in Go over a sandbox's files (ls, grep,
// sed, git, ...). The interpreter looks tools up by name in the tool set it
// is given; the shell package itself ships none of them (see shell/tools).
type Tool struct {
	// Run runs one invocation and returns its exit status. It reports
	// errors the way the GNU tool does: a message on c.Stderr and a
	// non-zero status. It must honour ctx (check it every few thousand
	// lines or files) and must not keep c's streams after it returns.
	Run func(ctx context.Context, c *Call) int

	// Check reports, before anything runs, whether this tool can run args
	// (argv without argv[0]) faithfully. Words the analysis cannot know
	// before run time are passed as [Unknown]. It returns nil when every
	// known flag is implemented, and an error wrapping [ErrUnsupported]
	// naming the first flag that is not. A nil Check accepts any args.
	Check func(args []string) error
}

// Unknown stands for a word whose value is not known before run time
// (it contains an expansion) when a [Tool]'s Check is called.
const Unknown = "\x00unknown"

// ErrUnsupported marks something the isolate tier cannot do faithfully: an
// unknown command, an unimplemented flag, a feature it lacks. The router
// sends such an exec to a container instead.
var ErrUnsupported = errors.New("not supported in the isolate tier")

// ExitUnsupported is the exit status of a tool that met an unsupported
// flag at run time (it wrote nothing before failing).
const ExitUnsupported = 125

// Call is one invocation of a [Tool]. The interpreter fills every field.
type Call struct {
	Args   []string // Args[0] is the command name as invoked
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Dir is the working directory, an absolute sandbox path.
	Dir string
	// Env holds the exported environment as NAME=value pairs.
	Env []string
	// FS is the sandbox's file view. Use [Call.Open], [Call.Create] and
	// [Call.Abs] rather than FS directly, so that relative paths, "-" and
	// /dev/null, /dev/stdin, /dev/stdout, /dev/stderr and /dev/fd/N work.
	FS storage.FS
	// Exec runs another command line's argv (for find -exec, xargs, env,
	// timeout, nice...) with the given streams, through the interpreter's
	// own lookup of builtins and tools, and returns its exit status.
	Exec func(ctx context.Context, sub *Call) int
	// FDs holds the open descriptors above 2 (from redirections such as
	// 3<file or process substitution's /dev/fd/63): each value is an
	// io.Reader, an io.Writer, or both. Nil when there are none.
	FDs map[int]any
	// Unsupported is set by [Call.Fail] when the tool gave up because of
	// something it does not implement.
	Unsupported error

	mem  *memBudget    // the exec's memory budget; nil on a Call the interpreter did not make
	held *atomic.Int64 // bytes this call has reserved (shared by copies of the Call)
	cpu  *execSched    // the exec's share of the scheduler; nil likewise
}
