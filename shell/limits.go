package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

// This file holds what one exec's runners share, and the limits they
// count against it.

// shared is the state of one exec that every subshell, pipeline stage and
// background job of it shares: limit counters and the cancel function.
type shared struct {
	sh       *Shell
	limits   Limits
	cancel   context.CancelCauseFunc
	commands atomic.Int64
	loops    atomic.Int64
	output   atomic.Int64
	written  atomic.Int64
	pids     atomic.Int64
	njobs    atomic.Int64 // background jobs running (jobs counts them too, but cannot be read)
	start    time.Time
	stdin    io.Reader
	mem      memBudget
	cpu      *execSched // &cpuState, or nil outside any scheduler
	cpuState execSched
	rootCtx  context.Context // the exec's context
	toolCtx  context.Context // rootCtx as tools get it (schedCtx); both set before any goroutine starts

	// stopUnsupported ends the exec at the first refusal (see
	// Request.StopUnsupported); set before the exec starts.
	stopUnsupported bool
	// beforeChange is Request.BeforeChange; changeOnce calls it once,
	// changeErr keeps its error.
	beforeChange func() error
	changeOnce   sync.Once
	changeErr    error
	// track is the exec's file view, which knows whether it changed a
	// file; set before the exec starts.
	track *trackFS
	// program is the checked program the exec runs, or nil: script files
	// the run reads are checked as it was (see verifyScript).
	program *Program
	// startup is set while a login shell's startup files run (login.go):
	// the files they source are checked as startup files.
	startup bool
	// tainted are the functions the startup files defined whose bodies
	// the check did not admit, and taintedBodies their bodies once the
	// startup files ran: calling one refuses the exec.
	tainted       map[string]bool
	taintedBodies map[*syntax.Stmt]string

	// funcSrc maps a function's body (*syntax.Stmt) to the file bash
	// names in errors inside it: where it was defined (see funcSource).
	funcSrc sync.Map

	mu          sync.Mutex // guards the fields below
	unsupported error
	limit       string
	closers     []io.Closer
	jobs        sync.WaitGroup
}

func (s *shared) setUnsupported(err error) {
	s.mu.Lock()
	first := s.unsupported == nil
	if first {
		s.unsupported = err
	}
	s.mu.Unlock()
	if first && s.stopUnsupported {
		// Nothing after the refusal runs: the caller may run the whole
		// exec in the container instead.
		s.cancel(errRefused)
	}
}

// errRefused is the cancel cause of an exec stopped at a refusal.
var errRefused = errors.New("stopped at something the isolate tier cannot run")

func (s *shared) addCloser(c io.Closer) {
	s.mu.Lock()
	s.closers = append(s.closers, c)
	s.mu.Unlock()
}

// limitError is the cancel cause of an exec that breached a limit.
type limitError struct {
	name string
	max  int64
	show string // max as the message shows it ("1m0s"); "" shows the number
}

func (e *limitError) Error() string {
	return fmt.Sprintf("limit exceeded: %s (max %s)", e.name, e.shown())
}

func (e *limitError) shown() string {
	if e.show != "" {
		return e.show
	}
	return strconv.FormatInt(e.max, 10)
}

// cpuOver ends the exec at its CPU budget (the scheduler calls it).
func (s *shared) cpuOver() {
	s.breachShown("cpu_time", int64(s.limits.CPUTime/time.Millisecond), s.limits.CPUTime.String())
}

// breach records that limit name was exceeded and stops the exec.
func (s *shared) breach(name string, max int64) { s.breachShown(name, max, "") }

// breachShown is breach for a limit whose maximum reads better as show.
func (s *shared) breachShown(name string, max int64, show string) {
	s.mu.Lock()
	if s.limit == "" {
		s.limit = name
	}
	s.mu.Unlock()
	s.cancel(&limitError{name, max, show})
}

// tick counts one command against the limits and checks the context.
func (r *runner) tick() bool {
	if r.ctx.Err() != nil {
		return false
	}
	if n := r.sh.commands.Add(1); n > r.sh.limits.Commands {
		r.sh.breach("commands", r.sh.limits.Commands)
		return false
	}
	if r.grown >= r.recountAt && !r.memCheck() {
		return false
	}
	if r.sh.cpu.due() {
		r.sh.cpu.checkpoint(r.ctx)
	}
	return true
}

// loopTick counts one loop iteration.
func (r *runner) loopTick() bool {
	if r.ctx.Err() != nil {
		return false
	}
	if n := r.sh.loops.Add(1); n > r.sh.limits.LoopIterations {
		r.sh.breach("loop_iterations", r.sh.limits.LoopIterations)
		return false
	}
	if r.grown >= r.recountAt && !r.memCheck() {
		return false
	}
	if r.sh.cpu.due() {
		r.sh.cpu.checkpoint(r.ctx)
	}
	return true
}

func (r *runner) checkString(s string) {
	if int64(len(s)) > r.sh.limits.StringBytes {
		r.sh.breach("string_bytes", r.sh.limits.StringBytes)
		panic(fatal{})
	}
}

func (r *runner) checkArray(n int) {
	if int64(n) > r.sh.limits.ArrayElems {
		r.sh.breach("array_elems", r.sh.limits.ArrayElems)
		panic(fatal{})
	}
}

// poll is a check point for a long computation inside one command (an
// expansion over a long value): it yields the run slot when asked, and
// unwinds when the exec's context is done (a limit, the wall time).
func (r *runner) poll() {
	if r.sh.cpu.due() {
		r.sh.cpu.checkpoint(r.ctx)
	}
	if r.ctx.Err() != nil {
		panic(fatal{})
	}
}
