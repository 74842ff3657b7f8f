package storage

import (
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dirCacheMax bounds the directory handles one Root caches. Past it the
// cache is emptied and refilled: simpler than an LRU across a tree whose
// entries depend on their ancestors, and rare for the directories one
// exec touches.
const dirCacheMax = 128

// dirCache maps canonical sandbox directory paths ("/workspace/src": no
// symlinks, no "." or "..", as the kernel itself reports the directory's
// path) to O_PATH handles, so that Stat and Lstat in a cached directory
// cost one fstatat(2) of a single name instead of openat2, fstat, close.
//
// A cached handle is valid while its directory and every directory above
// it keep their names: the root and each cached directory are watched
// with inotify for their own moves and deletions and for subdirectories
// being removed, renamed or renamed over (rmdir of a directory whose
// handle we hold reports IN_DELETE_SELF only once the handle closes, so
// the parent's IN_DELETE is what counts), and the pending events are
// read, without blocking, before every lookup (through an [ExecView]:
// before its first lookup and after its own Remove and Rename). inotify
// queues an event before the rename or rmdir that caused it returns, so a
// change that completed before a lookup
// began is always seen by it; a change concurrent with a lookup may or may
// not be, as for any two racing system calls. A handle is always a
// directory inside the root that was resolved with RESOLVE_IN_ROOT, and
// it is only used with one final name and AT_SYMLINK_NOFOLLOW, so even a
// stale handle could not reach outside the root.
//
// The cache is created on first use. When inotify is unavailable (the
// per-user instance limit, fs.inotify.max_user_instances, is reached),
// it stays disabled and every lookup takes the uncached path.
type dirCache struct {
	mu       sync.Mutex // guards the fields below; held across the non-blocking inotify read, which never waits
	ifd      int        // inotify descriptor; -1 before first use or when disabled
	disabled bool
	closed   bool
	rootHost string // the root's host path, as /proc reports it
	byPath   map[string]*dirEnt
	byWd     map[int32]*dirEnt // includes rootWd's entry, which is not in byPath
	rootWd   int32
	buf      []byte // inotify read buffer
}

const watchMask = unix.IN_MOVE_SELF | unix.IN_DELETE_SELF | unix.IN_DELETE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ONLYDIR

// dirEnt is one cached directory handle.
type dirEnt struct {
	path string
	fd   int
	wd   int32
	refs int  // lookups using fd now; guarded by dirCache.mu
	dead bool // removed from the cache; fd closes when refs reaches 0
}

// canonicalSplit splits name into its directory and final component when
// the directory part is in canonical form and the final component is an
// ordinary name. ok is false for anything else, which then takes the
// uncached path.
func canonicalSplit(name string) (dir, base string, ok bool) {
	i := strings.LastIndexByte(name, '/')
	if i <= 0 || i == len(name)-1 || name[0] != '/' {
		return "", "", false
	}
	dir, base = name[:i], name[i+1:]
	if base == "." || base == ".." || !canonicalDir(dir) {
		return "", "", false
	}
	return dir, base, true
}

// canonicalDir reports whether dir is "/a/b" with no empty, "." or ".."
// component.
func canonicalDir(dir string) bool {
	for rest := dir; rest != ""; {
		if rest[0] != '/' {
			return false
		}
		rest = rest[1:]
		j := strings.IndexByte(rest, '/')
		if j < 0 {
			j = len(rest)
		}
		switch rest[:j] {
		case "", ".", "..":
			return false
		}
		rest = rest[j:]
	}
	return true
}

// acquire returns the cached handle of canonical directory dir, filling
// the cache on a miss, or nil when dir cannot be cached. The caller
// passes the result to release. v is the exec view asking, or nil: the
// pending events are read first unless v has read them since its last
// Remove or Rename.
func (r *Root) acquire(dir string, v *ExecView) *dirEnt {
	if !r.enter() {
		return nil
	}
	defer r.leave()
	c := &r.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready(r.fd) {
		return nil
	}
	if v == nil {
		c.drain()
	} else if gen := v.gen.Load(); v.drained.Load() != gen+1 {
		c.drain()
		// Only the generation read before draining is marked: a Remove or
		// Rename through v that ended after that read bumps gen, so the
		// next lookup drains again and sees its event. (Lookups are
		// serialized by c.mu, so the mark only grows.)
		v.drained.Store(gen + 1)
	}
	e := c.byPath[dir]
	if e == nil {
		e = r.fillLocked(dir)
		if e == nil {
			return nil
		}
	}
	e.refs++
	return e
}

// release ends a use of e.
func (r *Root) release(e *dirEnt) {
	c := &r.cache
	c.mu.Lock()
	e.refs--
	closeIt := e.dead && e.refs == 0
	c.mu.Unlock()
	if closeIt {
		unix.Close(e.fd)
	}
}

// ready creates the inotify instance, watching the root, on first use.
func (c *dirCache) ready(rootFD int) bool {
	if c.disabled || c.closed {
		return false
	}
	if c.byPath != nil {
		return true
	}
	ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		c.disabled = true
		return false
	}
	wd, err := unix.InotifyAddWatch(ifd, "/proc/self/fd/"+itoa(rootFD), watchMask)
	if err != nil {
		unix.Close(ifd)
		c.disabled = true
		return false
	}
	c.ifd, c.rootWd = ifd, int32(wd)
	c.byPath = map[string]*dirEnt{}
	c.byWd = map[int32]*dirEnt{c.rootWd: {path: "", fd: -1, wd: c.rootWd}}
	c.buf = make([]byte, 4096)
	return true
}

// fillLocked caches dir and, first, each directory above it. It returns
// nil when dir does not exist, is not a directory, or is not canonical
// (a symlink on the way).
func (r *Root) fillLocked(dir string) *dirEnt {
	c := &r.cache
	if e := c.byPath[dir]; e != nil {
		return e
	}
	if i := strings.LastIndexByte(dir, '/'); i > 0 {
		if r.fillLocked(dir[:i]) == nil {
			return nil
		}
	}
	if len(c.byPath) >= dirCacheMax {
		c.flush()
		// The ancestors just cached went too; start again, once.
		if i := strings.LastIndexByte(dir, '/'); i > 0 && r.fillLocked(dir[:i]) == nil {
			return nil
		}
	}
	fd, err := r.openat2(dir[1:], unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil
	}
	procDir, err := procFDDir()
	if err != nil {
		unix.Close(fd)
		return nil
	}
	// Watch before checking the path, so that a rename between the two
	// is either caught by the check or queued as an event.
	wd, err := unix.InotifyAddWatch(c.ifd, "/proc/self/fd/"+itoa(fd), watchMask)
	if err != nil {
		unix.Close(fd)
		return nil
	}
	if c.rootHost == "" {
		c.rootHost, _ = readlinkAt(procDir, itoa(r.fd))
	}
	host, err := readlinkAt(procDir, itoa(fd))
	if err != nil || c.rootHost == "" || host != strings.TrimSuffix(c.rootHost, "/")+dir {
		unix.InotifyRmWatch(c.ifd, uint32(wd))
		unix.Close(fd)
		return nil
	}
	if old := c.byWd[int32(wd)]; old != nil {
		// The same directory under another name: cannot happen for a
		// canonical path unless an event is still queued. Start afresh.
		c.flush()
		unix.Close(fd)
		return nil
	}
	e := &dirEnt{path: dir, fd: fd, wd: int32(wd)}
	c.byPath[dir] = e
	c.byWd[e.wd] = e
	return e
}

// drain applies every queued inotify event.
func (c *dirCache) drain() {
	for {
		n, err := unix.Read(c.ifd, c.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			if err != nil && err != unix.EAGAIN {
				c.flush() // cannot tell what changed
			}
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&c.buf[off]))
			name := c.buf[off+unix.SizeofInotifyEvent : min(n, off+unix.SizeofInotifyEvent+int(ev.Len))]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			c.apply(ev, name)
		}
	}
}

// apply drops what an event makes stale.
func (c *dirCache) apply(ev *unix.InotifyEvent, name []byte) {
	if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
		c.flush()
		return
	}
	e := c.byWd[ev.Wd]
	if e == nil {
		return // a watch already dropped
	}
	if ev.Len == 0 {
		// The watched directory itself moved or went away.
		if e.wd == c.rootWd {
			c.flush()
			c.disabled = true
			return
		}
		c.dropTree(e.path)
		return
	}
	if ev.Mask&unix.IN_ISDIR == 0 {
		return // a file came or went: cached directories are unaffected
	}
	if i := strings.IndexByte(string(name), 0); i >= 0 {
		name = name[:i]
	}
	c.dropTree(e.path + "/" + string(name))
}

// dropTree removes dir and every cached directory below it.
func (c *dirCache) dropTree(dir string) {
	for p, e := range c.byPath {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			c.drop(e)
		}
	}
}

func (c *dirCache) flush() {
	for _, e := range c.byPath {
		c.drop(e)
	}
}

func (c *dirCache) drop(e *dirEnt) {
	delete(c.byPath, e.path)
	if c.byWd[e.wd] == e {
		delete(c.byWd, e.wd)
	}
	unix.InotifyRmWatch(c.ifd, uint32(e.wd))
	e.dead = true
	if e.refs == 0 {
		unix.Close(e.fd)
	}
}

// close releases the cache's descriptors; lookups after it are uncached.
func (c *dirCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byPath != nil {
		c.flush()
		unix.Close(c.ifd)
		c.byPath = nil
	}
	c.closed = true
}

// ExecView is a [Root] as one exec (one command line of the isolate
// shell) sees it; get one from [Root.ExecView]. It is the same file view,
// except that Stat and Lstat read the stat cache's pending change events
// only at the view's first cached lookup and again after each Remove or
// Rename made through the view, not before every lookup. So the exec sees
// its own changes at once, and changes made from outside (the container,
// other callers of the Root) that completed before the exec began; a
// change made from outside while the exec runs may go unseen by the
// exec's later lookups, as if it had raced them. Resolution stays inside
// the root either way: a cached handle is always a directory of the root
// used with one final name.
//
// An ExecView is safe for concurrent use. Its Close does nothing; the
// Root's owner closes the Root.
type ExecView struct {
	*Root
	gen     atomic.Int64 // bumped after each Remove and Rename through the view
	drained atomic.Int64 // 1 + the gen value the last drain started at; 0 before the first
}

var _ FS = (*ExecView)(nil)

// ExecView returns a new view of r for one exec; see [ExecView]. (So is
// ExecView{Root: r}: the zero counters are a view that has not read the
// events yet.)
func (r *Root) ExecView() *ExecView { return &ExecView{Root: r} }

// Stat implements [FS].
func (v *ExecView) Stat(name string) (fs.FileInfo, error) {
	return v.stat("stat", name, unix.O_PATH, v)
}

// Lstat implements [FS].
func (v *ExecView) Lstat(name string) (fs.FileInfo, error) {
	return v.stat("lstat", name, unix.O_PATH|unix.O_NOFOLLOW, v)
}

// Close does nothing: the Root stays open (it is not the view's to close).
func (v *ExecView) Close() error { return nil }

// Remove implements [FS].
func (v *ExecView) Remove(name string) error {
	defer v.gen.Add(1)
	return v.Root.Remove(name)
}

// Rename implements [FS].
func (v *ExecView) Rename(oldname, newname string) error {
	defer v.gen.Add(1)
	return v.Root.Rename(oldname, newname)
}
