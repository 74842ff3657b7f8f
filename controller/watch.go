package controller

import (
	"context"
	"errors"
	"io/fs"
	"syscall"

	"rung.dev/rung"
	"rung.dev/rung/storage"
)

// Watcher reports changes under a directory of a sandbox. It holds file
// handles of its own, not the sandbox's activity: the sandbox may go idle
// (or be deleted) while it watches. Next is for one goroutine at a time;
// Close may be called from any goroutine and ends a waiting Next.
type Watcher struct {
	*storage.Watcher
	root *storage.Root
}

// Close stops the watch. It is idempotent.
func (w *Watcher) Close() error {
	err := w.Watcher.Close()
	w.root.Close()
	return err
}

// WatchRequest says what [Controller.Watch] watches.
type WatchRequest struct {
	Path      string // a directory under /workspace or /tmp (see [SandboxPath])
	Recursive bool   // and every directory below it, found without following symbolic links
	MaxDirs   int    // bound on watched directories; 0 is storage's default (1024)
}

// Watch starts watching a directory of tenant's sandbox ref where its
// files live on the host (container writes included): paths resolve
// inside the sandbox's file view, so no symbolic link leads a watch out of
// it. Events name sandbox paths. A path outside /workspace and /tmp or not
// a directory is ErrInvalid, a missing one ErrNotFound, a tree of more
// than MaxDirs directories or no inotify instance left a
// *rung.LimitError. The caller closes the watcher.
func (c *Controller) Watch(ctx context.Context, tenant rung.TenantID, ref string, req WatchRequest) (*Watcher, error) {
	p, err := SandboxPath(req.Path)
	if err != nil {
		return nil, err
	}
	var id rung.SandboxID
	if err := c.withRoot(ctx, tenant, ref, func(a *actor) error { id = a.id; return nil }); err != nil {
		return nil, err
	}
	root, err := c.pool.Root(string(id))
	if err != nil {
		return nil, err
	}
	w, err := root.Watch(p, storage.WatchOptions{Recursive: req.Recursive, MaxDirs: req.MaxDirs})
	if err != nil {
		root.Close()
		if errors.Is(err, syscall.ENOTDIR) {
			return nil, rung.Errorf(rung.ErrInvalid, "watch %s: not a directory", p)
		}
		if rung.Code(err) == rung.CodeLimit {
			return nil, err
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, rung.Errorf(rung.ErrNotFound, "watch %s: no such directory", p)
		}
		return nil, fsErr("watch", p, err)
	}
	return &Watcher{Watcher: w, root: root}, nil
}
