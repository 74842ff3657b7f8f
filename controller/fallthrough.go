package controller

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/router"
	"rung.dev/rung/shell"
	"rung.dev/rung/store"
)

// This file is the run-time fall-through of auto execs (issue 11): the
// isolate tier may still meet something it cannot run faithfully that
// the check could not see (a path found at run time, a command built by
// the script). The exec then stops there; if it had no effect yet (no
// file changed, no output passed on, no streamed stdin read) it runs
// again, whole, in the container, and its reason says so; otherwise it
// ends with exit status 125 and a message on stderr. A script is never
// half-run in two tiers.

// holdStreamed is how much output of a streamed exec is held back, and
// for how long at most, before it is passed on: until then the exec can
// still fall through to the container. Most isolate execs end well
// within both (microseconds), so their output is passed on at the end.
const (
	holdStreamedBytes = 64 << 10
	holdStreamedFor   = 20 * time.Millisecond
)

// checkedRun is the streams of an exec run from a checked program.
type checkedRun struct {
	stdin         io.Reader
	out           *output
	lease         *shell.Lease
	streamedStdin bool // stdin is read from the client as the exec runs
	// gate makes the exec's start entry durable (see Exec): before its
	// first change, and before it runs again in the container.
	gate func() error
}

// runChecked runs an exec auto sent to the isolate tier, from the
// program the check admitted, and falls through to the container when
// the tier refuses it at run time before any effect. d then names the
// container and why.
func (c *Controller) runChecked(ctx context.Context, a *actor, sb store.Sandbox, d *router.Decision, req rung.ExecRequest, r checkedRun) (outcome, error) {
	hold := newHoldOutput(r.out, r.out.buffer, c.lim.OutputBytes)
	defer hold.stop()
	stdin := r.stdin
	var read *readCounter
	if r.streamedStdin {
		read = &readCounter{r: stdin}
		stdin = read
	}
	sctx, sp := c.startTierSpan(ctx, rung.BackendIsolate)
	res := a.sh.Run(sctx, shell.Request{Program: d.Program, StopUnsupported: true, Dir: req.Dir,
		Env: isolateEnv(c.envOf(sb.Sandbox), req.Env), Stdin: stdin, Stdout: hold.writer("stdout"), Stderr: hold.writer("stderr"),
		Lease: r.lease, Tenant: string(sb.Tenant), Sandbox: string(sb.ID), ShellName: c.isolateShellName(a), BeforeChange: r.gate,
		Login: d.Login})
	if !res.Stopped {
		hold.release()
		o := isolateOutcome(res)
		endTierSpan(sp, o, nil)
		return o, nil
	}
	why := strings.TrimSuffix(fmt.Sprint(res.Unsupported), ": "+shell.ErrUnsupported.Error())
	if sp != nil {
		sp.Set(slog.String(AttrTierRefused, why))
		sp.End(nil)
	}
	var effects []string
	if res.Changed {
		effects = append(effects, "changed files")
	}
	if hold.passedOn() {
		effects = append(effects, "sent output")
	}
	if read != nil && read.n.Load() > 0 {
		effects = append(effects, "read its standard input")
	}
	if len(effects) == 0 && c.tier != nil {
		hold.discard()
		d.Backend = rung.BackendContainer
		d.Reason = "isolate tier refused at run time: " + why + "; ran in the container"
		d.Class = router.ClassFallThrough
		if !r.streamedStdin {
			stdin = bytes.NewReader(req.Stdin)
		}
		if err := r.gate(); err != nil {
			return outcome{}, err
		}
		o, err := c.runContainer(ctx, a, sb, req, containerIO{stdin: stdin}, r.out)
		o.rerouted = d.Reason
		return o, err
	}
	hold.release()
	msg := "it had already " + strings.Join(effects, " and ")
	if len(effects) == 0 {
		msg = "this server has no container tier"
	}
	fmt.Fprintf(streamWriter{r.out, "stderr"}, "rung: the isolate tier cannot run this faithfully (%s) and %s: the exec stopped there and did not run in the container; run it again with backend container\n", why, msg)
	return outcome{TierExit: TierExit{Code: shell.ExitUnsupported, Reason: rung.ExitReasonExit}}, nil
}

// holdOutput keeps an exec's output back from its output (and so from
// the client) until release, or until it has held too much or, for a
// streamed exec, for too long: then it passes it on and lets the rest
// through. It is safe for concurrent use.
type holdOutput struct {
	out      *output
	max      int64         // bytes held before passing them on
	delay    time.Duration // how long a streamed exec's first output is held; 0: until release
	mu       sync.Mutex    // guards the fields below
	held     []Chunk       // Seq unused
	n        int64
	passed   bool // output has gone to out: the client may have it
	timer    *time.Timer
	stopping bool
}

// newHoldOutput holds out's output: at most limit bytes (all the output
// kept) when buffered, since a buffered exec's output reaches the client
// only with its result; a streamed exec's for holdStreamedFor and
// holdStreamedBytes at most.
func newHoldOutput(out *output, buffered bool, limit int64) *holdOutput {
	if buffered {
		return &holdOutput{out: out, max: limit}
	}
	return &holdOutput{out: out, max: holdStreamedBytes, delay: holdStreamedFor}
}

type holdWriter struct {
	h      *holdOutput
	stream string
}

func (h *holdOutput) writer(stream string) io.Writer { return holdWriter{h, stream} }

func (w holdWriter) Write(p []byte) (int, error) {
	w.h.write(w.stream, p)
	return len(p), nil
}

func (h *holdOutput) write(stream string, p []byte) {
	if len(p) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.passed {
		h.out.write(stream, p)
		return
	}
	h.held = append(h.held, Chunk{Stream: stream, Data: bytes.Clone(p)})
	h.n += int64(len(p))
	switch {
	case h.n > h.max:
		h.passLocked()
	case h.delay > 0 && h.timer == nil && !h.stopping:
		// Runs once, after delay; stop waits for nothing: a late firing
		// finds the output passed on or discarded.
		h.timer = time.AfterFunc(h.delay, h.release)
	}
}

// release passes everything held on, and lets later output through.
func (h *holdOutput) release() {
	h.mu.Lock()
	h.passLocked()
	h.mu.Unlock()
}

func (h *holdOutput) passLocked() {
	for _, c := range h.held {
		h.out.write(c.Stream, c.Data)
	}
	h.held, h.passed = nil, true
}

// passedOn reports whether any output went on to the client's stream.
func (h *holdOutput) passedOn() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.passed
}

// discard drops what is held and anything written later.
func (h *holdOutput) discard() {
	h.mu.Lock()
	h.held, h.passed = nil, false
	h.stopping = true
	if h.timer != nil {
		h.timer.Stop()
	}
	h.mu.Unlock()
}

// stop stops the timer; what is held stays held.
func (h *holdOutput) stop() {
	h.mu.Lock()
	h.stopping = true
	if h.timer != nil {
		h.timer.Stop()
	}
	h.mu.Unlock()
}

// readCounter counts the bytes read through it.
type readCounter struct {
	r io.Reader
	n atomic.Int64
}

func (rc *readCounter) Read(p []byte) (int, error) {
	n, err := rc.r.Read(p)
	rc.n.Add(int64(n))
	return n, err
}
