package container

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"rung.dev/rung"
)

// freezeTimeout bounds how long Freeze waits for every task of the
// container to stop: one in an uninterruptible sleep (a slow disk, a
// stuck NFS read) keeps the cgroup FREEZING.
const freezeTimeout = 2 * time.Second

// Freeze stops every process of the container (its agent, commands and
// background processes, or under gVisor its sentry and gofer) with the
// cgroup v1 freezer, and returns a function that thaws them. A stopped
// process is stopped between system calls, so nothing it does is half
// done in the files while it is frozen. Freeze waits until the kernel
// reports the cgroup FROZEN; if that takes more than two seconds it
// thaws it again and fails with rung.ErrUnavailable. The thaw function
// must be called, and is safe to call once.
func (c *Container) Freeze(ctx context.Context) (thaw func() error, err error) {
	state := filepath.Join(cgroupFS, "freezer", "rung", string(c.Sandbox), "freezer.state")
	thaw = func() error {
		if err := os.WriteFile(state, []byte("THAWED"), 0); err != nil {
			return fmt.Errorf("thaw container of %s: %w", c.Sandbox, err)
		}
		return nil
	}
	if err := os.WriteFile(state, []byte("FROZEN"), 0); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, rung.Errorf(rung.ErrUnavailable, "freezing is not available: the host has no cgroup v1 freezer for the container")
		}
		return nil, fmt.Errorf("freeze container of %s: %w", c.Sandbox, err)
	}
	deadline := time.Now().Add(freezeTimeout)
	for {
		b, err := os.ReadFile(state)
		if err == nil && strings.TrimSpace(string(b)) == "FROZEN" {
			return thaw, nil
		}
		if err != nil || time.Now().After(deadline) || ctx.Err() != nil {
			thaw()
			if err == nil {
				err = rung.Errorf(rung.ErrUnavailable, "the container's processes did not stop within %s", freezeTimeout)
			}
			return nil, err
		}
		// The kernel offers no notification for FREEZING -> FROZEN in
		// cgroup v1; the transition takes microseconds for running tasks.
		time.Sleep(100 * time.Microsecond)
	}
}
