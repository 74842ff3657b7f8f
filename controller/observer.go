package controller

import (
	"context"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/router"
)

// Observer is told what the controller did, for metrics: package metrics
// implements it, and cmd/rung wires it through [Config].Observer. Its
// funcs are called on the goroutines that did the work, after the fact:
// they must be quick, never block, and be safe for concurrent use. A nil
// func is not called. Label values it passes on come from small fixed
// sets (backends, reason classes, exit reasons, operations, entry types),
// never from callers' text.
type Observer struct {
	// Exec: an exec ended (it was journaled as started).
	Exec func(ExecObservation)
	// ContainerStart: a sandbox's container started: cold (started for
	// it, took is the start) or warm (a spare claimed by a create, took
	// is from the claim until the container serves the sandbox).
	ContainerStart func(warm bool, took time.Duration)
	// Snapshot: a snapshot, fork, restore or rollback ended.
	Snapshot func(SnapshotObservation)
	// Egress: the network tier reported one egress entry of a sandbox
	// (typ is rung.EntryEgressConnection, EntryEgressRequest or
	// EntryEgressDenied).
	Egress func(typ rung.EntryType, e Egress)
	// UsagePass: one pass of the usage sampler read sandboxes in took.
	UsagePass func(took time.Duration, sandboxes int)
}

// ExecObservation is one exec, as metrics count it.
type ExecObservation struct {
	Backend rung.Backend // the tier it ran in
	// Reason is the class of why it ran there (router.ClassChecked, ...),
	// not the free-text reason of its result.
	Reason string
	// ExitReason is how it ended; "" when it ended without a result,
	// and then Error is the error's code ("internal", "unavailable").
	ExitReason rung.ExitReason
	Error      string
	Duration   time.Duration
}

// The operations of a [SnapshotObservation].
const (
	OpSnapshot = "snapshot" // Snapshot
	OpFork     = "fork"     // Fork and ForkSnapshot
	OpRestore  = "restore"  // Create with FromSnapshot
	OpRollback = "rollback" // Rollback
)

// SnapshotObservation is one snapshot operation, as metrics count it.
type SnapshotObservation struct {
	Op       string // OpSnapshot, OpFork, OpRestore or OpRollback
	Duration time.Duration
	Err      error // nil when it succeeded
	Forks    int   // for OpFork: the sandboxes it made
}

// observeExec tells the observer how an exec that ran ended.
func (c *Controller) observeExec(d router.Decision, o outcome, runErr error, took time.Duration) {
	if c.cfg.Observer.Exec == nil {
		return
	}
	ob := ExecObservation{Backend: d.Backend, Reason: d.Class, ExitReason: o.Reason, Duration: took}
	if runErr != nil {
		ob.ExitReason, ob.Error = "", rung.Code(runErr)
	}
	c.cfg.Observer.Exec(ob)
}

// observeSnapshot tells the observer that snapshot operation op, begun
// at start, ended with err having made forks sandboxes.
func (c *Controller) observeSnapshot(op string, start time.Time, err error, forks int) {
	if c.cfg.Observer.Snapshot != nil {
		c.cfg.Observer.Snapshot(SnapshotObservation{Op: op, Duration: time.Since(start), Err: err, Forks: forks})
	}
}

// observeStart tells the observer that a container started.
func (c *Controller) observeStart(warm bool, took time.Duration) {
	if c.cfg.Observer.ContainerStart != nil {
		c.cfg.Observer.ContainerStart(warm, took)
	}
}

// SandboxStates returns how many sandboxes, of every tenant, are in each
// state ("creating" and "deleted" included: rows on their way in or out),
// for metrics.
func (c *Controller) SandboxStates(ctx context.Context) (map[rung.State]int, error) {
	return c.st.SandboxStates(ctx)
}
