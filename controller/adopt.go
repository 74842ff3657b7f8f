package controller

import (
	"context"
	"encoding/json"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// Live restore (issue 12): at start-up, the sandboxes whose row says
// "running" get their containers back when an earlier daemon left them
// running (it was killed, or stopped with Config.LiveRestore): the
// container tier adopts each one, follows its background processes again
// and the journal says so (container.adopted). Execs that were in flight
// are lost, as before (reconcile journals exec.lost): their client went
// with the daemon, and the agent ended their commands when the
// connection closed. A container that cannot be adopted (gone, agent not
// answering, state unreadable) is stopped, and its sandbox becomes ready
// with a container.exited entry whose reason is daemon_restart. Either
// way, every background process the journal saw start gets an end:
// process.exited for one that ended while no daemon ran (the agent keeps
// recent exits), process.lost for one nobody can account for any more.

// adoptContainers runs after reconcile, once c.ctx is set (an adopted
// container's exit is journaled); running are the rows reconcile left
// running for it.
func (c *Controller) adoptContainers(ctx context.Context, running []store.Sandbox, rep *Report) {
	t, err := c.containers()
	if err != nil {
		return
	}
	sbs := make([]rung.Sandbox, len(running))
	for i, sb := range running {
		sbs[i] = sb.Sandbox
	}
	adopted, failed := t.Adopt(ctx, sbs)
	for _, sb := range running {
		procs, ok := adopted[sb.ID]
		if !ok {
			c.notAdopted(ctx, sb, failed[sb.ID])
			rep.Stopped = append(rep.Stopped, sb.ID)
			continue
		}
		c.journal(ctx, sb.ID, rung.EntryContainerAdopted, ContainerAdopted{
			Processes: len(procs), Reason: "the daemon restarted; the container kept running",
		})
		c.settleProcesses(ctx, sb.ID, procs)
		c.touchContainer(sb.ID, rung.StateRunning) // re-arms the idle alarm
		rep.Adopted = append(rep.Adopted, sb.ID)
	}
	c.reapStale(ctx, t, nil)
}

// reapUnowned runs before reconcile: it removes the containers an earlier
// daemon left for sandboxes whose rows do not say running (spares, and
// sandboxes being deleted or created), before reconcile removes their
// subvolumes from under them; the others wait for adoptContainers.
func (c *Controller) reapUnowned(ctx context.Context) error {
	t, err := c.containers()
	if err != nil {
		return nil
	}
	rows, err := c.st.ListSandboxes(ctx, store.Filter{})
	if err != nil {
		return err
	}
	running := map[rung.SandboxID]bool{}
	for _, sb := range rows {
		if sb.State == rung.StateRunning {
			running[sb.ID] = true
		}
	}
	c.reapStale(ctx, t, func(id rung.SandboxID) bool { return running[id] })
	return nil
}

func (c *Controller) reapStale(ctx context.Context, t ContainerRestore, keep func(rung.SandboxID) bool) {
	reaped, err := t.ReapStale(ctx, keep)
	if err != nil {
		c.log.WarnContext(ctx, "reap containers left by an earlier daemon", "err", err)
	}
	if len(reaped) > 0 {
		c.log.InfoContext(ctx, "reaped containers left by an earlier daemon", "count", len(reaped), "sandboxes", reaped)
	}
}

// notAdopted makes sb ready again after its container could not be
// adopted, and journals why and which processes went with it.
func (c *Controller) notAdopted(ctx context.Context, sb store.Sandbox, cause error) {
	sb.State, sb.IdleAt, sb.UpdatedAt = rung.StateReady, time.Time{}, time.Now().UTC()
	if err := c.st.UpdateSandbox(ctx, sb); err != nil {
		c.log.WarnContext(ctx, "sandbox state after restart", "sandbox", sb.ID, "err", err)
	}
	detail := "no container of the sandbox is running"
	if cause != nil {
		detail = cause.Error()
	}
	c.log.InfoContext(ctx, "container not adopted after restart", "sandbox", sb.ID, "err", cause)
	c.journal(ctx, sb.ID, rung.EntryContainerExited, ContainerExited{Detail: detail, Reason: "daemon_restart"})
	c.settleProcesses(ctx, sb.ID, nil)
}

// settleProcesses journals the end of every background process the
// journal saw start and never saw end: process.exited when procs (the
// agent's list) has its exit, process.lost when it is not there at all.
// Running ones are followed by the container tier.
func (c *Controller) settleProcesses(ctx context.Context, id rung.SandboxID, procs []ProcessInfo) {
	open, err := c.openProcesses(ctx, id)
	if err != nil {
		c.log.WarnContext(ctx, "read journal for processes", "sandbox", id, "err", err)
		return
	}
	known := map[string]ProcessInfo{}
	for _, p := range procs {
		known[p.ID] = p
	}
	for pid, argv := range open {
		p, ok := known[pid]
		switch {
		case ok && p.Running:
		case ok && p.Exit != nil:
			c.journal(ctx, id, rung.EntryProcessExited, ProcessExited{
				Argv: clipArgv(p.Argv), ExitCode: p.Exit.Code, ExitReason: rung.ExitReason(p.Exit.Reason), Process: p.ID, Signal: p.Exit.Signal,
			})
		default:
			c.journal(ctx, id, rung.EntryProcessLost, ProcessLost{
				Argv: argv, Process: pid, Reason: "daemon restarted and the process's container did not survive it",
			})
		}
	}
}

// openProcesses reads sandbox id's journal for background processes that
// started and have no process.exited or process.lost entry: their ids
// with their argv.
func (c *Controller) openProcesses(ctx context.Context, id rung.SandboxID) (map[string][]string, error) {
	open := map[string][]string{}
	var after int64
	for {
		evs, err := c.st.ListEvents(ctx, id, store.EventQuery{After: after, Limit: 1000, JournalOnly: true})
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			after = e.Seq
			var d ProcessStarted // process.exited and process.lost have its fields too
			switch rung.EntryType(e.Type) {
			case rung.EntryProcessStarted:
				if json.Unmarshal(e.Data, &d) == nil && d.Process != "" {
					open[d.Process] = d.Argv
				}
			case rung.EntryProcessExited, rung.EntryProcessLost:
				if json.Unmarshal(e.Data, &d) == nil {
					delete(open, d.Process)
				}
			}
		}
		if len(evs) < 1000 {
			return open, nil
		}
	}
}
