package image

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
	"rung.dev/rung/storage"
)

// What [Store.LoginFiles] hands out is bounded: an imported image is
// untrusted, and its files stay in memory while it is cached. Debian's
// come to a few KiB.
const (
	maxLoginFile    = 1 << 20 // bytes of one file
	maxLoginEntries = 256     // names in /etc/profile.d, whiteouts included
	maxLoginBytes   = 4 << 20 // bytes of one image's files together
)

// RootFile is a file or directory of a container's root file system, as
// [Store.LoginFiles] returns it.
type RootFile struct {
	Path     string      // absolute: "/etc/profile", "/etc/profile.d", "/etc/profile.d/gawk.sh"
	Mode     fs.FileMode // type bits (fs.ModeDir for the directory), permission, set-id and sticky bits
	UID, GID uint32
	Size     int64 // bytes of Data; a directory's size in its layer
	ModTime  time.Time
	Data     []byte // a regular file's content; nil for the directory
}

// LoginFiles returns what `bash -l` reads of the root file system of a
// running container of im whose overlay upper directory is upper ("" for
// none), as that container sees it: /etc/profile, the directory
// /etc/profile.d followed by its entries sorted by path, and
// /etc/bash.bash_logout. Layers merge as in [Store.CopyDir], and upper
// over them as overlayfs merges it; a path with no entry, or a
// whiteout, is not in the list. fromUpper reports that upper changes the
// list (a file written or removed there by the container): the list is
// then read anew on every call.
//
// It refuses, with an error, what a login shell might read differently
// in the container: at /etc and /etc/profile.d anything but a directory,
// at the two files and in /etc/profile.d anything but a regular file (a
// symbolic link, say); a file others may not read, an /etc they may not
// search or an /etc/profile.d they may not list and search; and more
// than 1 MiB in one file, 4 MiB in all, or 256 names in /etc/profile.d,
// whiteouts included (rung.ErrLimit). In upper, an etc or etc/profile.d
// that overlayfs would not merge plainly with the layers' (an etc that
// is a symbolic link, a whiteout or opaque; either redirected to another
// directory) and a file whose data overlayfs keeps in a lower layer
// (metacopy) are errors wrapping [ErrMerged]; a file the container
// replaces while it is read is refused.
//
// The layers' part never changes, so it is read once per image digest
// and cached, refusals included: a call then costs only the look at
// upper (one system call when it has no etc, seven when its etc holds
// none of the files). Every caller shares the Data slices, which must
// not be modified. It is safe for concurrent use.
func (s *Store) LoginFiles(im Image, upper string) (files []RootFile, fromUpper bool, err error) {
	set, err := s.loginFiles(im)
	if err == nil {
		err = set.refused
	}
	if err != nil {
		return nil, false, fmt.Errorf("login files of image %s: %w", im.Name, err)
	}
	if upper == "" {
		return slices.Clone(set.files), false, nil
	}
	etc, err := openUpperEtc(upper)
	if err != nil {
		return nil, false, fmt.Errorf("login files of image %s: %w", im.Name, err)
	}
	if etc < 0 {
		return slices.Clone(set.files), false, nil
	}
	defer unix.Close(etc)
	files, fromUpper, err = mergeUpperLogin(etc, set.files)
	if err != nil {
		return nil, false, fmt.Errorf("login files of image %s: %w", im.Name, err)
	}
	return files, fromUpper, nil
}

// loginSet is an image's login files as its layers hold them.
type loginSet struct {
	files   []RootFile
	refused error // why the layers' files are not handed out; nil if they are
	bytes   int   // of the files' Data
}

// The bounds of Store.loginCache.
const (
	maxCachedLogins     = 64       // images
	maxCachedLoginBytes = 32 << 20 // bytes of Data
)

// loginFiles returns im's login files from the cache, reading and
// caching them on a miss. A refusal is cached like files (it follows from
// the layers), an error reading them is not.
func (s *Store) loginFiles(im Image) (*loginSet, error) {
	if set, ok := s.loginCache.get(im.Digest); ok {
		return set, nil
	}
	files, err := s.readLoginFiles(im)
	if _, ok := errors.AsType[*refusal](err); err != nil && !ok {
		return nil, err
	}
	set := &loginSet{files: files, refused: err}
	for _, f := range files {
		set.bytes += len(f.Data)
	}
	if im.Digest == "" {
		return set, nil // a hand-made Image: nothing to key it by
	}
	return s.loginCache.put(im.Digest, set, set.bytes), nil
}

// refusal is why an image's login files are not handed out: a property
// of its layers, unlike an error reading them.
type refusal struct{ err error }

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

func refuse(format string, args ...any) error {
	return &refusal{fmt.Errorf(format, args...)}
}

// budget is how many bytes of login files a reading may still take
// (maxLoginBytes at first). Each file is charged before it is read, so
// that the files past the bound are refused unread: a container filling
// its /etc/profile.d made every login shell read it all first (256 MiB,
// BenchmarkLoginFilesRefused).
type budget struct{ left int64 }

func newBudget() *budget { return &budget{left: maxLoginBytes} }

// charge takes n bytes from b, or refuses when fewer are left.
func (b *budget) charge(n int64) error {
	if n > b.left {
		return errLoginBytes()
	}
	b.left -= n
	return nil
}

func errLoginBytes() error {
	return &refusal{rung.Errorf(rung.ErrLimit, "login files hold more than %d MiB", maxLoginBytes>>20)}
}

// readLoginFiles reads im's login files from its layers; an error that
// is a *refusal says why they are not handed out.
func (s *Store) readLoginFiles(im Image) ([]RootFile, error) {
	root, err := s.mergedDir(im, "/")
	if err != nil {
		return nil, err
	}
	defer root.close()
	etc, err := loginDir(root, "/etc")
	if err != nil || etc == nil {
		return nil, err
	}
	defer etc.close()
	if etc.st.Mode&0o001 == 0 {
		return nil, refuse("/etc is not searchable by others")
	}
	var files []RootFile
	b := newBudget()
	if files, err = appendTopFile(files, etc, "/etc/profile", b); err != nil {
		return nil, err
	}
	d, err := loginDir(etc, "/etc/profile.d")
	if err != nil {
		return nil, err
	}
	if d != nil {
		defer d.close()
		if d.st.Mode&0o005 != 0o005 {
			return nil, refuse("/etc/profile.d is not readable and searchable by others")
		}
		files = append(files, rootFile("/etc/profile.d", &d.st, nil))
		ents, err := profileD(d, b)
		if err != nil {
			return nil, err
		}
		files = append(files, ents...)
	}
	if files, err = appendTopFile(files, etc, "/etc/bash.bash_logout", b); err != nil {
		return nil, err
	}
	return files, nil
}

// top finds name in the merged directory m as overlayfs shows it: the
// layer directory that holds its topmost entry, and that entry's
// attributes. ok is false when no layer has it or that entry is a
// whiteout.
func (m *merged) top(name string) (layer int, st unix.Stat_t, ok bool, err error) {
	for _, fd := range m.fds {
		err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.ENOENT {
			continue
		}
		if err != nil {
			return -1, st, false, err
		}
		return fd, st, !whiteout(&st), nil
	}
	return -1, st, false, nil
}

// loginDir is the directory abs, a child of m, merged; nil when absent.
func loginDir(m *merged, abs string) (*merged, error) {
	name := path.Base(abs)
	_, st, ok, err := m.top(name)
	if err != nil || !ok {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, refuse("%s is %s, not a directory", abs, kind(&st))
	}
	d, err := m.child(name)
	if err == nil && d == nil {
		err = fmt.Errorf("%s vanished", abs)
	}
	return d, err
}

// appendTopFile appends the regular file abs, a child of etc, to files
// unless it is absent, charging it to b.
func appendTopFile(files []RootFile, etc *merged, abs string, b *budget) ([]RootFile, error) {
	name := path.Base(abs)
	fd, st, ok, err := etc.top(name)
	if err != nil || !ok {
		return files, err
	}
	f, err := readLoginFile(fd, name, abs, &st, false, b)
	if err != nil {
		return nil, err
	}
	return append(files, f), nil
}

// profileD reads the entries of /etc/profile.d, merged, sorted by path,
// charging them to b.
func profileD(d *merged, b *budget) ([]RootFile, error) {
	seen := map[string]bool{}
	var out []RootFile
	for _, fd := range d.fds {
		// One more name than the bound is enough to refuse: a layer's
		// names are distinct, so all of them would be seen.
		names, err := readNames(fd, maxLoginEntries+1)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			if seen[name] {
				continue // a higher layer's entry hides it
			}
			seen[name] = true
			if len(seen) > maxLoginEntries {
				return nil, &refusal{rung.Errorf(rung.ErrLimit, "/etc/profile.d holds more than %d names", maxLoginEntries)}
			}
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return nil, err
			}
			if whiteout(&st) {
				continue
			}
			f, err := readLoginFile(fd, name, "/etc/profile.d/"+name, &st, false, b)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b RootFile) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// testHookLoginOpen, when set (by tests), runs just before readLoginFile
// opens the file it checked.
var testHookLoginOpen func(abs string)

// readLoginFile reads name of the layer directory fd, shown at abs, whose
// attributes are st, charging its bytes to b. In an upper directory
// (upper), a file whose data overlayfs keeps in a lower layer is an error
// wrapping [ErrMerged].
func readLoginFile(fd int, name, abs string, st *unix.Stat_t, upper bool, b *budget) (RootFile, error) {
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return RootFile{}, refuse("%s is %s, not a regular file", abs, kind(st))
	}
	if st.Mode&0o004 == 0 {
		return RootFile{}, refuse("%s is not readable by others", abs)
	}
	if st.Size > maxLoginFile {
		return RootFile{}, &refusal{rung.Errorf(rung.ErrLimit, "%s is larger than %d MiB", abs, maxLoginFile>>20)}
	}
	if err := b.charge(st.Size); err != nil {
		return RootFile{}, err
	}
	if testHookLoginOpen != nil {
		testHookLoginOpen(abs)
	}
	in, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return RootFile{}, fmt.Errorf("%s: %w", abs, err)
	}
	f := os.NewFile(uintptr(in), abs)
	defer f.Close()
	if upper {
		// The container may replace the entry between the two calls
		// (with a FIFO, say): what was opened must be what was checked.
		var ost unix.Stat_t
		if err := unix.Fstat(in, &ost); err != nil {
			return RootFile{}, fmt.Errorf("%s: %w", abs, err)
		}
		if ost.Dev != st.Dev || ost.Ino != st.Ino {
			return RootFile{}, refuse("%s changed while it was read", abs)
		}
		if _, err := unix.Fgetxattr(in, "trusted.overlay.metacopy", nil); err != unix.ENODATA {
			return RootFile{}, fmt.Errorf("upper %s keeps its data in a lower layer (metacopy): %w", abs, ErrMerged)
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxLoginFile+1))
	if err != nil {
		return RootFile{}, err
	}
	if len(data) > maxLoginFile { // it grew since Fstatat
		return RootFile{}, &refusal{rung.Errorf(rung.ErrLimit, "%s is larger than %d MiB", abs, maxLoginFile>>20)}
	}
	if err := b.charge(int64(len(data)) - st.Size); err != nil { // the change since Fstatat
		return RootFile{}, err
	}
	return rootFile(abs, st, data), nil
}

func rootFile(abs string, st *unix.Stat_t, data []byte) RootFile {
	size := st.Size
	if data != nil {
		size = int64(len(data))
	}
	return RootFile{Path: abs, Mode: storage.FileMode(st.Mode), UID: st.Uid, GID: st.Gid, Size: size, ModTime: time.Unix(st.Mtim.Unix()), Data: data}
}

// kind names the type of file st describes, for errors.
func kind(st *unix.Stat_t) string {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFCHR:
		if whiteout(st) {
			return "a whiteout"
		}
		return "a device"
	case unix.S_IFBLK:
		return "a device"
	case unix.S_IFIFO:
		return "a FIFO"
	default:
		return "a socket"
	}
}

// openUpperEtc opens the etc directory of the overlay upper directory
// upper for mergeUpperLogin: -1 when there is none. One that overlayfs
// would not merge plainly with the layers' /etc is an error wrapping
// [ErrMerged]. It runs before every login shell, and a system call costs
// a microsecond on a virtual machine, so it makes few: one when upper has
// no etc, three when it has.
func openUpperEtc(upper string) (int, error) {
	// Only the last component comes from the container, and O_NOFOLLOW
	// with O_DIRECTORY opens nothing but a directory there: a symbolic
	// link fails with ELOOP, anything else with ENOTDIR.
	etc, err := unix.Open(upper+"/etc", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch err {
	case nil:
	case unix.ENOENT:
		return -1, nil
	case unix.ELOOP, unix.ENOTDIR:
		return -1, fmt.Errorf("upper /etc is not a directory: %w", ErrMerged)
	default:
		return -1, fmt.Errorf("upper /etc: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(etc, &st); err != nil {
		unix.Close(etc)
		return -1, fmt.Errorf("upper /etc: %w", err)
	}
	if isOpaque, err := mergesPlainly(etc); err != nil || isOpaque {
		unix.Close(etc)
		if err == nil {
			err = fmt.Errorf("is opaque: %w", ErrMerged)
		}
		return -1, fmt.Errorf("upper /etc %w", err)
	}
	if st.Mode&0o001 == 0 {
		unix.Close(etc)
		return -1, errors.New("upper /etc is not searchable by others")
	}
	return etc, nil
}

// mergeUpperLogin merges what the upper directory's etc (etc, opened by
// openUpperEtc) holds of the login files over base, the layers' list,
// as overlayfs shows them: a file there replaces the layers' and a
// whiteout removes it; an etc/profile.d there shows its own attributes
// and entries over the layers' (only its own when it is opaque), and a
// whiteout of it removes it with its entries. changed reports that etc
// holds any of them; when it holds none, the list is base, copied.
func mergeUpperLogin(etc int, base []RootFile) (files []RootFile, changed bool, err error) {
	names := [...]string{"profile", "profile.d", "bash.bash_logout"}
	var sts [len(names)]unix.Stat_t
	var found [len(names)]bool
	for i, name := range names {
		switch err := unix.Fstatat(etc, name, &sts[i], unix.AT_SYMLINK_NOFOLLOW); err {
		case unix.ENOENT:
		case nil:
			found[i], changed = true, true
		default:
			return nil, false, fmt.Errorf("upper /etc/%s: %w", name, err)
		}
	}
	if !changed {
		return slices.Clone(base), false, nil
	}
	// Every file read here is in the merged list, so the upper files
	// alone past the bound refuse it before the rest is read.
	b := newBudget()
	byPath := make(map[string]RootFile, len(base))
	for _, f := range base {
		byPath[f.Path] = f
	}
	for i, name := range names {
		if !found[i] {
			continue
		}
		if name == "profile.d" && !whiteout(&sts[i]) {
			err = mergeUpperProfileD(etc, &sts[i], byPath, b)
		} else {
			err = mergeUpperEntry(etc, name, "/etc/"+name, &sts[i], byPath, b)
		}
		if err != nil {
			return nil, false, err
		}
	}
	total, entries := 0, 0
	for p, f := range byPath {
		files = append(files, f)
		total += len(f.Data)
		if p != "/etc/profile.d" && under(p, "/etc/profile.d") {
			entries++
		}
	}
	if entries > maxLoginEntries {
		return nil, false, &refusal{rung.Errorf(rung.ErrLimit, "/etc/profile.d holds more than %d names", maxLoginEntries)}
	}
	if total > maxLoginBytes {
		return nil, false, errLoginBytes()
	}
	slices.SortFunc(files, func(a, b RootFile) int {
		return cmp.Or(loginOrder(a.Path)-loginOrder(b.Path), strings.Compare(a.Path, b.Path))
	})
	return files, true, nil
}

// mergeUpperEntry merges the entry name of the upper directory dir, shown
// at abs, whose attributes are st, into byPath: a whiteout removes abs
// and all under it, a regular file (charged to b) replaces it.
func mergeUpperEntry(dir int, name, abs string, st *unix.Stat_t, byPath map[string]RootFile, b *budget) error {
	if whiteout(st) {
		deleteUnder(byPath, abs)
		return nil
	}
	f, err := readLoginFile(dir, name, abs, st, true, b)
	if err != nil {
		return err
	}
	byPath[abs] = f
	return nil
}

// mergeUpperProfileD merges the upper directory's etc/profile.d, whose
// attributes are st, into byPath.
func mergeUpperProfileD(etc int, st *unix.Stat_t, byPath map[string]RootFile, b *budget) error {
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return refuse("/etc/profile.d is %s, not a directory", kind(st))
	}
	d, err := unix.Openat(etc, "profile.d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("upper /etc/profile.d: %w", err)
	}
	defer unix.Close(d)
	isOpaque, err := mergesPlainly(d)
	if err != nil {
		return fmt.Errorf("upper /etc/profile.d %w", err)
	}
	if st.Mode&0o005 != 0o005 {
		return refuse("/etc/profile.d is not readable and searchable by others")
	}
	if isOpaque {
		deleteUnder(byPath, "/etc/profile.d")
	}
	byPath["/etc/profile.d"] = rootFile("/etc/profile.d", st, nil)
	names, err := readNames(d, maxLoginEntries+1) // one more is enough to refuse
	if err != nil {
		return fmt.Errorf("upper /etc/profile.d: %w", err)
	}
	if len(names) > maxLoginEntries {
		return &refusal{rung.Errorf(rung.ErrLimit, "/etc/profile.d holds more than %d names", maxLoginEntries)}
	}
	for _, name := range names {
		abs := "/etc/profile.d/" + name
		var est unix.Stat_t
		if err := unix.Fstatat(d, name, &est, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("upper %s: %w", abs, err)
		}
		if err := mergeUpperEntry(d, name, abs, &est, byPath, b); err != nil {
			return err
		}
	}
	return nil
}

// deleteUnder deletes p and every path under it from byPath.
func deleteUnder(byPath map[string]RootFile, p string) {
	for q := range byPath {
		if under(q, p) {
			delete(byPath, q)
		}
	}
}

// loginOrder orders LoginFiles' list: /etc/profile, /etc/profile.d and
// its entries by path, /etc/bash.bash_logout.
func loginOrder(p string) int {
	switch {
	case p == "/etc/profile":
		return 0
	case p == "/etc/bash.bash_logout":
		return 2
	}
	return 1
}

// under reports whether p is dir or inside it.
func under(p, dir string) bool {
	rest, ok := strings.CutPrefix(p, dir)
	return ok && (rest == "" || rest[0] == '/')
}

// mergesPlainly reports whether the upper directory dir (opened for
// reading) is opaque, and returns an error wrapping [ErrMerged] when it
// is redirected: a directory renamed under redirect_dir=on carries its
// origin, and overlayfs merges that lower directory under it instead; on
// by default, redirect_always_follow honours it even when the mount makes
// none. Copied-up directories carry other overlay attributes (origin,
// impure), so it reads the list of names, one system call, and a value
// only when the list names it.
func mergesPlainly(dir int) (opaqueDir bool, err error) {
	// Names end with a NUL; the one before the first lets a name be
	// matched whole.
	var buf [1024]byte
	n, err := unix.Flistxattr(dir, buf[1:])
	if err != nil && err != unix.ERANGE {
		return false, fmt.Errorf("list attributes: %w", err)
	}
	list := buf[:1+n]
	if err == unix.ERANGE { // longer than any overlayfs sets: ask
		list = []byte("\x00trusted.overlay.opaque\x00trusted.overlay.redirect\x00")
	}
	if bytes.Contains(list, []byte("\x00trusted.overlay.redirect\x00")) {
		if _, err := unix.Fgetxattr(dir, "trusted.overlay.redirect", nil); err != unix.ENODATA {
			return false, fmt.Errorf("is redirected: %w", ErrMerged)
		}
	}
	return bytes.Contains(list, []byte("\x00trusted.overlay.opaque\x00")) && opaque(dir), nil
}
