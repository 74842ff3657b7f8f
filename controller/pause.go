package controller

import (
	"context"

	"rung.dev/rung"
)

// errNoMemoryCheckpoint is the answer to a pause that asks to keep memory.
// What was measured on this host (kernel 6.18): CRIU 3.17 fails to
// initialise, and the packaged runsc's restore hangs after a working
// checkpoint. docs/DECISIONS.md says what would enable it.
var errNoMemoryCheckpoint = rung.Errorf(rung.ErrUnavailable,
	"memory checkpoints are not available on this server: CRIU 3.17 fails to initialise on this kernel, "+
		"and runsc's restore hangs after its checkpoint; pause without memory keeps the sandbox's files, not its processes")

// Pause is E2B's pause as rung offers it: the sandbox's container stops
// (gracefully, as [Controller.StopContainer]) and everything on disk
// stays (workspace, /tmp, root filesystem changes); memory and running
// processes do not. memory asks to keep them too, which this server
// cannot: ErrUnavailable with the reason.
func (c *Controller) Pause(ctx context.Context, tenant rung.TenantID, ref string, memory bool) error {
	if memory {
		if _, err := c.Get(ctx, tenant, ref); err != nil {
			return err
		}
		return errNoMemoryCheckpoint
	}
	return c.StopContainer(ctx, tenant, ref)
}

// Resume starts a paused sandbox's container again (as
// [Controller.StartContainer]); its processes start afresh.
func (c *Controller) Resume(ctx context.Context, tenant rung.TenantID, ref string) (rung.Sandbox, error) {
	return c.StartContainer(ctx, tenant, ref)
}
