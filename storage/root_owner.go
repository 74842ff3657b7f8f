package storage

import "golang.org/x/sys/unix"

// SetOwner makes every file, directory and symlink created through r
// from now on belong to uid and gid: the sandbox's user, so that what the
// file API and the isolate tier write, the container's commands (running
// as that user) can change, and the other way round. Existing files keep
// their owners. uid and gid 0, the default, leave new files to the
// daemon's own identity (root). It is safe to call while r is in use;
// creations in flight may take either owner.
func (r *Root) SetOwner(uid, gid uint32) {
	r.owner.Store(uint64(uid)<<32 | uint64(gid))
}

// Owner returns what [Root.SetOwner] set.
func (r *Root) Owner() (uid, gid uint32) {
	o := r.owner.Load()
	return uint32(o >> 32), uint32(o)
}

// ownFD gives the file just created as fd to the owner SetOwner set.
func (r *Root) ownFD(fd int) error {
	o := r.owner.Load()
	if o == 0 {
		return nil
	}
	return unix.Fchown(fd, int(o>>32), int(uint32(o)))
}

// ownAt gives base in directory dfd, just created, to the owner SetOwner
// set, without following it if it is a symlink: whatever replaced it in
// the meantime, only that entry itself changes owner.
func (r *Root) ownAt(dfd int, base string) error {
	o := r.owner.Load()
	if o == 0 {
		return nil
	}
	return unix.Fchownat(dfd, base, int(o>>32), int(uint32(o)), unix.AT_SYMLINK_NOFOLLOW)
}

// Lchown sets the owner of name, not following a final symlink, like
// lchown(2).
func (r *Root) Lchown(name string, uid, gid uint32) error {
	return r.atParent("lchown", name, func(dfd int, base string) error {
		return unix.Fchownat(dfd, base, int(uid), int(gid), unix.AT_SYMLINK_NOFOLLOW)
	})
}
