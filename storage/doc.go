// Package storage keeps every sandbox's files: a btrfs pool with one
// subvolume per sandbox, O(1) snapshots and forks, per-sandbox quotas, and
// the traversal-safe file view ([FS], [Root]) that the isolate tier uses.
//
// Terms. The pool is one btrfs filesystem. A sandbox's subvolume holds
// fs/workspace and fs/tmp (the view, what /workspace and /tmp are inside
// the container) and rootfs/upper and rootfs/work (its container's
// overlayfs layer). A snapshot is a read-only snapshot of that subvolume; a
// fork is a writable snapshot of a snapshot or of a live sandbox. Because
// the view and the root filesystem changes are one subvolume, one snapshot
// captures everything the sandbox has written, atomically.
package storage
