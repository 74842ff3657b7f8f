package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
)

// WatchOp is what happened to a watched file. One event may carry several.
type WatchOp uint8

// The operations of a [WatchEvent], after inotify's: a file (or directory)
// appeared in a watched directory, created or moved in (Create); its
// contents changed (Write); it was deleted (Remove) or moved away
// (Rename); its mode, owner or times changed (Chmod).
const (
	WatchCreate WatchOp = 1 << iota
	WatchWrite
	WatchRemove
	WatchRename
	WatchChmod
)

// WatchEvent is one change under a watched directory.
type WatchEvent struct {
	Path string // the file's path in the view (absolute, like the watched dir's)
	Op   WatchOp
	Dir  bool // the file is a directory
}

// WatchOptions configures [Root.Watch]. The zero value watches one
// directory, not its subdirectories.
type WatchOptions struct {
	Recursive bool // also every directory below it, including ones made later
	// MaxDirs bounds the directories one watch holds (each is an inotify
	// watch, which the host counts against fs.inotify.max_user_watches);
	// default 1024. A recursive watch of a larger tree fails with a
	// [rung.LimitError]; subdirectories made later beyond it are not
	// watched (their parent still reports them created).
	MaxDirs int
}

// Watcher reports changes under a directory of a [Root], through inotify.
// Next is for one goroutine at a time; Lost and Close may be called from
// any goroutine, and Close ends a Next that waits.
type Watcher struct {
	root      *Root
	f         *os.File // the inotify descriptor, non-blocking, in Go's poller
	recursive bool
	maxDirs   int
	top       string // the watched directory's path in the view

	lost atomic.Bool // events were lost: the kernel's queue overflowed, or directories beyond MaxDirs went unwatched

	// Used only by Next's goroutine:
	dirs map[int]string // watch descriptor to the directory's path in the view
	// moved holds, by inotify cookie, the old path of a watched directory
	// moved away, until its IN_MOVED_TO arrives (in the same read).
	moved map[uint32]string
	buf   []byte
}

const watchEvents = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MODIFY | unix.IN_DELETE |
	unix.IN_MOVED_FROM | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// Watch starts watching directory name (resolved inside the root, so a
// symbolic link cannot lead it out) and, with opt.Recursive, the
// directories below it, which are found without following symbolic
// links. The watcher keeps its own handles: it stays valid after the
// Root is closed, though directories made after that are not added.
// A missing name is fs.ErrNotExist, a non-directory ENOTDIR (in an
// *fs.PathError); running out of inotify instances is a
// [rung.LimitError]. The caller must Close the watcher.
func (r *Root) Watch(name string, opt WatchOptions) (*Watcher, error) {
	if opt.MaxDirs <= 0 {
		opt.MaxDirs = 1024
	}
	ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		if err == unix.EMFILE || err == unix.ENFILE {
			return nil, fmt.Errorf("watch %s: %w", name, &rung.LimitError{Limit: "inotify_instances"})
		}
		return nil, &fs.PathError{Op: "watch", Path: name, Err: err}
	}
	w := &Watcher{root: r, f: os.NewFile(uintptr(ifd), "inotify"), recursive: opt.Recursive, maxDirs: opt.MaxDirs,
		top: path.Clean(name), dirs: map[int]string{}, moved: map[uint32]string{}, buf: make([]byte, 64<<10)}
	if err := w.add(w.top, false); err != nil {
		w.f.Close()
		return nil, err
	}
	if opt.Recursive {
		if err := w.addTree(w.top, nil); err != nil {
			w.f.Close()
			return nil, err
		}
	}
	return w, nil
}

// control runs fn with the inotify descriptor, which Close cannot close
// meanwhile. (os.File.Fd would make the descriptor blocking, and then
// Close could no longer end a waiting Read.)
func (w *Watcher) control(fn func(ifd int) error) error {
	rc, err := w.f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

var errWatchDirs = errors.New("too many directories")

// add watches directory p. Below the top, a symbolic link is not followed.
func (w *Watcher) add(p string, below bool) error {
	if len(w.dirs) >= w.maxDirs {
		return errWatchDirs
	}
	flags := uint64(unix.O_PATH | unix.O_DIRECTORY)
	if below {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := w.root.open("watch", p, flags, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// The kernel resolved the directory inside the root; inotify is given
	// that very directory through its descriptor, never a host path.
	var wd int
	err = w.control(func(ifd int) error {
		var err error
		wd, err = unix.InotifyAddWatch(ifd, "/proc/self/fd/"+itoa(fd), watchEvents)
		return err
	})
	if err != nil {
		if err == unix.ENOSPC {
			return fmt.Errorf("watch %s: %w", p, &rung.LimitError{Limit: "inotify_watches"})
		}
		return &fs.PathError{Op: "watch", Path: p, Err: err}
	}
	w.dirs[wd] = p
	return nil
}

// addTree watches the directories below dir (already watched). A
// directory that vanishes or turns out not to be one meanwhile is
// skipped; the bound is an error at the start and skipped later. With
// found set, each entry is reported to it as created: for a directory
// made after the watch began, entries may have come before its own
// watch did.
func (w *Watcher) addTree(dir string, found *[]WatchEvent) error {
	ents, err := w.root.ReadDir(dir)
	if err != nil {
		return nil // gone meanwhile: its removal is reported
	}
	for _, e := range ents {
		p := path.Join(dir, e.Name())
		if found != nil {
			*found = append(*found, WatchEvent{Path: p, Op: WatchCreate, Dir: e.IsDir()})
		}
		if !e.IsDir() {
			continue
		}
		switch err := w.add(p, true); {
		case err == nil:
			if err := w.addTree(p, found); err != nil {
				return err
			}
		case errors.Is(err, errWatchDirs):
			return fmt.Errorf("watch %s: more than %d directories: %w", w.top, w.maxDirs, &rung.LimitError{Limit: "watched_directories", Max: int64(w.maxDirs)})
		case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ELOOP):
		default:
			return err
		}
	}
	return nil
}

// Next waits for changes and returns them in the order they happened. It
// returns os.ErrClosed once the watcher is closed, and an error when the
// watched directory itself is gone (after its Remove or Rename event).
func (w *Watcher) Next() ([]WatchEvent, error) {
	for {
		n, err := w.f.Read(w.buf)
		if err != nil {
			if errors.Is(err, os.ErrClosed) || errors.Is(err, fs.ErrClosed) {
				return nil, os.ErrClosed
			}
			return nil, fmt.Errorf("read inotify events: %w", err)
		}
		evs, gone := w.parse(w.buf[:n])
		if len(evs) > 0 {
			return evs, nil
		}
		if gone {
			return nil, fmt.Errorf("watch %s: %w", w.top, fs.ErrNotExist)
		}
	}
}

// parse turns raw inotify records into events; gone reports that the
// top directory's watch ended.
func (w *Watcher) parse(b []byte) (evs []WatchEvent, gone bool) {
	for len(b) >= unix.SizeofInotifyEvent {
		raw := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(raw.Len)
		if end > len(b) {
			break
		}
		name := strings.TrimRight(string(b[unix.SizeofInotifyEvent:end]), "\x00")
		b = b[end:]
		if raw.Mask&unix.IN_Q_OVERFLOW != 0 {
			w.lost.Store(true)
			continue
		}
		dir, ok := w.dirs[int(raw.Wd)]
		if !ok {
			continue
		}
		if raw.Mask&unix.IN_IGNORED != 0 {
			delete(w.dirs, int(raw.Wd))
			if dir == w.top {
				gone = true
			}
			continue
		}
		evs = w.event(evs, raw, dir, name)
	}
	// The kernel queues a move's two halves together: a directory moved
	// away whose other half did not come left the tree. Its watches go.
	for c, old := range w.moved {
		for wd, d := range w.dirs {
			if d == old || strings.HasPrefix(d, old+"/") {
				w.control(func(ifd int) error { _, err := unix.InotifyRmWatch(ifd, uint32(wd)); return err })
				delete(w.dirs, wd)
			}
		}
		delete(w.moved, c)
	}
	return evs, gone
}

// event appends what one record of directory dir says to evs, keeping
// the watched directories' paths up to date.
func (w *Watcher) event(evs []WatchEvent, raw *unix.InotifyEvent, dir, name string) []WatchEvent {
	m := raw.Mask
	isDir := m&unix.IN_ISDIR != 0
	if name == "" {
		// An event of a watched directory itself: only the top's removal
		// or move is news; below it, the parent reported it.
		if dir != w.top || m&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) == 0 {
			return evs
		}
		op := WatchRemove
		if m&unix.IN_MOVE_SELF != 0 {
			op = WatchRename
		}
		return append(evs, WatchEvent{Path: dir, Op: op, Dir: true})
	}
	p := path.Join(dir, name)
	var op WatchOp
	if m&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
		op |= WatchCreate
	}
	if m&unix.IN_MODIFY != 0 {
		op |= WatchWrite
	}
	if m&unix.IN_DELETE != 0 {
		op |= WatchRemove
	}
	if m&unix.IN_MOVED_FROM != 0 {
		op |= WatchRename
	}
	if m&unix.IN_ATTRIB != 0 {
		op |= WatchChmod
	}
	if op == 0 {
		return evs
	}
	evs = append(evs, WatchEvent{Path: p, Op: op, Dir: isDir})
	if isDir && w.recursive {
		evs = w.trackDir(evs, raw, p)
	}
	return evs
}

// trackDir follows a directory below a recursive watch: a new one
// is watched (what it already holds is appended to evs as created), a
// moved one keeps its watches under its new path, one moved out of the
// tree loses them.
func (w *Watcher) trackDir(evs []WatchEvent, raw *unix.InotifyEvent, p string) []WatchEvent {
	switch m := raw.Mask; {
	case m&unix.IN_MOVED_FROM != 0:
		w.moved[raw.Cookie] = p
	case m&unix.IN_MOVED_TO != 0:
		if old, ok := w.moved[raw.Cookie]; ok {
			delete(w.moved, raw.Cookie)
			for wd, d := range w.dirs {
				if d == old || strings.HasPrefix(d, old+"/") {
					w.dirs[wd] = p + d[len(old):]
				}
			}
			return evs
		}
		fallthrough
	case m&unix.IN_CREATE != 0:
		if err := w.add(p, true); err == nil {
			if w.addTree(p, &evs) != nil {
				w.lost.Store(true)
			}
		} else if errors.Is(err, errWatchDirs) {
			w.lost.Store(true)
		}
	}
	return evs
}

// Lost reports whether events were lost since the watch began: the
// kernel's queue overflowed, or directories beyond MaxDirs went unwatched.
func (w *Watcher) Lost() bool { return w.lost.Load() }

// Close stops the watch and ends a waiting Next. It is idempotent.
func (w *Watcher) Close() error {
	err := w.f.Close()
	if errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}
