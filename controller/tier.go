package controller

import (
	"context"
	"errors"
	"io"
	"net"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/shell"
)

// ContainerTier is the container tier as the controller uses it: the
// parts below, each a few methods. Package containers implements it over
// the container runtimes, the image store and the agent; cmd/rung wires
// it through [Config].Container. The controller works without one: then
// every exec the isolate tier cannot run faithfully fails with
// rung.ErrUnavailable. Implementations are safe for concurrent use.
type ContainerTier interface {
	ContainerRunner
	ContainerProcesses
	ContainerImages
	ContainerRestore
	// Spares returns a warm pool that keeps specs' spares (see
	// [WarmSpec]), or nil when no spec asks for one. An image a spec
	// names must exist.
	Spares(specs []WarmSpec) (Spares, error)
}

// ContainerRunner starts, stops and runs execs in sandboxes' containers.
type ContainerRunner interface {
	// Exec runs req.Command in sb's container, starting it if needed,
	// with the given streams and returns how it ended; an error means
	// there is no result ([ErrOutputLimit]: see TierRequest.MaxOutput).
	Exec(ctx context.Context, sb rung.Sandbox, req TierRequest) (TierExit, error)
	// Start starts sb's container unless it runs.
	Start(ctx context.Context, sb rung.Sandbox) error
	// Stop stops the sandbox's container if it has one; its files stay.
	// why is the reason its container.stopped entry gives.
	Stop(ctx context.Context, id rung.SandboxID, why string) error
	// Running reports whether the sandbox has a live container.
	Running(id rung.SandboxID) bool
	// Freeze pauses the sandbox's container until thaw is called; a
	// sandbox without one gets a nil thaw.
	Freeze(ctx context.Context, id rung.SandboxID) (thaw func() error, err error)
}

// ContainerProcesses runs background processes in sandboxes' running
// containers. A sandbox without one is rung.ErrConflict; the agent's
// refusals come classified (rung.ErrNotFound for an unknown process,
// ErrInvalid, ErrLimit, ErrConflict, ErrUnavailable).
type ContainerProcesses interface {
	// StartProcess starts a process in sb's container, starting the
	// container if needed. The caller journals the start, then calls
	// FollowProcess.
	StartProcess(ctx context.Context, sb rung.Sandbox, req TierProcess) (ProcessInfo, error)
	// FollowProcess reports the process's exit to
	// [ContainerEvents].ProcessExited once it exits, while its
	// container runs.
	FollowProcess(id rung.SandboxID, info ProcessInfo)
	// Processes lists the container's background processes, an OOM kill
	// reported as such.
	Processes(ctx context.Context, id rung.SandboxID) ([]ProcessInfo, error)
	// ProcessOutput streams process pid's output frames after seq after
	// to onFrame; with follow it waits until the process exits and
	// returns its exit.
	ProcessOutput(ctx context.Context, id rung.SandboxID, pid string, after int64, follow bool, onFrame func(OutputFrame)) (*ProcessExit, error)
	// SignalProcess sends a signal ("SIGTERM", ...) to process pid.
	SignalProcess(ctx context.Context, id rung.SandboxID, pid, signal string) error
	// WriteProcessStdin writes to process pid's stdin, closing it after
	// when closeAfter is set.
	WriteProcessStdin(ctx context.Context, id rung.SandboxID, pid string, data []byte, closeAfter bool) error
	// ResizeProcess sets the terminal size of process pid, started with
	// a PTY (rung.ErrInvalid for one without).
	ResizeProcess(ctx context.Context, id rung.SandboxID, pid string, size rung.TermSize) error
	// WaitPort waits until a TCP port inside the container accepts
	// connections, or timeout passes (rung.ErrTimeout).
	WaitPort(ctx context.Context, id rung.SandboxID, port int, timeout time.Duration) error
	// DialPort connects to a TCP port on the loopback of the sandbox's
	// running container; nothing listening there is rung.ErrUnavailable.
	DialPort(ctx context.Context, id rung.SandboxID, port int) (net.Conn, error)
}

// ContainerImages answers what the controller needs to know of images.
// An image reference is a name, name@sha256:…, or "" for the tier's
// default image.
type ContainerImages interface {
	// Identity resolves user against the accounts of image ref; an
	// unknown user is rung.ErrInvalid.
	Identity(ref, user string) (Identity, error)
	// ImageUser is the default user of image ref (its Config.User), ""
	// for root.
	ImageUser(ref string) (string, error)
	// ImagePath is where a container of image ref finds a command on its
	// PATH, for the isolate tier's check, and the shell its execs run
	// under; nil and "" when the isolate tier does not model the image.
	ImagePath(ref string) (lookPath func(string) string, shell string)
	// AccountFile is /etc/passwd or /etc/group (name "etc/passwd",
	// "etc/group") as a container of image ref sees it, upper being the
	// sandbox's overlay upper directory: the container's own copy, nil
	// when it removed the file, else the image's. An error means it
	// cannot tell.
	AccountFile(ref, upper, name string) ([]byte, error)
	// HasImage reports whether the image store keeps ref; true when it
	// cannot tell.
	HasImage(ref string) bool
	// LinkWorkspace makes directory dir (absolute) of image ref a
	// sandbox's /workspace before its container first starts: what the
	// image holds there is copied into workspace (the sandbox's
	// directory, as `cp -a` as root would), and upper (its overlay's
	// upper directory, not mounted yet) gets dir as a symbolic link to
	// /workspace. An image with no directory at dir is left alone.
	LinkWorkspace(ref, dir, upper, workspace string) error
	// LoginFiles is what a login shell of image ref reads outside the
	// sandbox's view before its command, as a container whose overlay
	// upper directory is upper sees it; an error means it cannot tell
	// (the container then runs login shells).
	LoginFiles(ref, upper string) (ImageLogin, error)
	// HomeLink is the target of the symbolic link home (absolute) is in
	// a container of image ref whose overlay upper directory is upper
	// (LinkWorkspace's), or "" when home is not one there.
	HomeLink(ref, upper, home string) (string, error)
}

// ImageLogin is what a login shell of an image reads outside the view.
type ImageLogin struct {
	// Files are /etc/profile, /etc/profile.d and its entries, and
	// /etc/bash.bash_logout, those that exist.
	Files []shell.SystemFile
	// Path is PATH in the image's environment, "" when it sets none.
	Path string
	// Key names Files (see shell.Login): the image's pinned reference,
	// with a digest of the files after it when the upper directory
	// changes them.
	Key string
}

// ContainerRestore is live restore: taking over, or removing, what an
// earlier daemon left running.
type ContainerRestore interface {
	// Adopt takes over the running containers an earlier daemon left for
	// sbs: each is watched like one started here and its running
	// processes are followed again. It returns, per adopted sandbox, its
	// processes (exits classified), and per sandbox it could not adopt,
	// why.
	Adopt(ctx context.Context, sbs []rung.Sandbox) (map[rung.SandboxID][]ProcessInfo, map[rung.SandboxID]error)
	// ReapStale removes what an earlier daemon left that was not
	// adopted, except the containers of the sandboxes keep reports (nil:
	// none), and returns the sandboxes whose containers it removed.
	ReapStale(ctx context.Context, keep func(rung.SandboxID) bool) ([]rung.SandboxID, error)
}

// Spares is a warm pool: spare sandboxes (a subvolume and a running
// container under a fresh id, no store row) for creates to claim.
type Spares interface {
	// Run refills the pool until ctx ends, then destroys every spare.
	Run(ctx context.Context)
	// Claim takes a live spare of image ref and size, whose spec linked
	// directory link to /workspace ("": none), off the pool and returns
	// its id and the image reference it runs; the caller then calls
	// Attach, Return or Destroy.
	Claim(ref string, size rung.Size, link string) (id rung.SandboxID, image string, ok bool)
	// Return gives back a claimed spare whose create failed before its
	// sandbox existed.
	Return(ctx context.Context, id rung.SandboxID)
	// Destroy stops a claimed spare's container and deletes its
	// subvolume.
	Destroy(ctx context.Context, id rung.SandboxID)
	// Attach hands a claimed spare's container to its sandbox, watched
	// like one started cold.
	Attach(id rung.SandboxID)
	// Ready returns how many spares are ready to be claimed.
	Ready() int
	// Wait waits until every spec has its count of spares, or ctx ends.
	Wait(ctx context.Context) error
}

// ContainerEvents is what a container tier reports to the controller,
// which journals it and keeps the sandbox's state. The controller hands
// it to [Config].Container when it opens the tier; a tier calls these
// from its own goroutines, never while holding a lock the controller
// could wait on.
type ContainerEvents struct {
	// Started: sb's container started cold, as s says. ctx is the
	// start's: that of the exec or request that needed the container.
	Started func(ctx context.Context, sb rung.Sandbox, s ContainerStart)
	// Used: the container served an exec, or a process in it ended while
	// it runs on; its idle timeout starts again.
	Used func(id rung.SandboxID)
	// Exited: the container ended; deliberate says rung stopped it (why
	// is the Stop's reason) rather than it dying.
	Exited func(id rung.SandboxID, deliberate bool, why string)
	// ProcessExited: a followed background process ended, reported once
	// and before its container's Exited.
	ProcessExited func(id rung.SandboxID, info ProcessInfo, exit ProcessExit)
}

// TierExit is how a command ended in a tier.
type TierExit struct {
	Code   int             // exit status, or 128+signal
	Reason rung.ExitReason // how it ended
	Signal string          // the signal that ended it ("SIGKILL"), or ""
}

// TierRequest is one exec as a tier sees it.
type TierRequest struct {
	Command string
	Dir     string
	Env     map[string]string // over the image's environment (see commandEnv)
	User    Identity          // who the command runs as
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	// MaxOutput bounds stdout plus stderr; a command that writes more is
	// killed and Exec returns ErrOutputLimit. Zero: the tier's default.
	MaxOutput int64
	// PTY, when set, runs the command on a pseudo-terminal of this size:
	// Stdin's bytes are typed at it first, then Input's messages, and
	// all output goes to Stdout.
	PTY   *rung.TermSize
	Input <-chan TermInput // a PTY's input; nil: none
	// Login runs Command under a login shell (the image's shell with -l).
	Login bool
}

// TierProcess is a background process as the container tier starts it.
type TierProcess struct {
	Command string            // run under the image's shell when Argv is empty
	Argv    []string          // run directly
	Dir     string            // working directory
	Env     map[string]string // over the image's environment (see commandEnv)
	User    Identity          // who it runs as
	PTY     *rung.TermSize    // runs on a pseudo-terminal of this size; nil: pipes
}

// ErrOutputLimit is a tier's answer for a command killed for writing
// more than TierRequest.MaxOutput.
var ErrOutputLimit = errors.New("output limit reached")
