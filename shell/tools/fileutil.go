package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
)

// This file holds helpers shared by the file tools (ls, cp, stat, du, ...).
// Names carry an "fu" prefix so they cannot collide with other engineers'
// helpers in this package.

// fuSpec is a tool's option table plus the GNU options it knows but does
// not implement: those make Run fail with [shell.ExitUnsupported] before
// writing anything, and make Check reject the command line.
type fuSpec struct {
	opts  *Options
	unimp map[string]bool // option keys GNU has and we refuse
}

// fuNewSpec builds a spec from implemented option specs and unimplemented
// ones (same syntax as [NewOptions]).
func fuNewSpec(impl []string, unimp ...string) *fuSpec {
	s := &fuSpec{opts: NewOptions(append(append([]string{}, impl...), unimp...)...), unimp: map[string]bool{}}
	for _, u := range unimp {
		u = strings.TrimSuffix(strings.TrimSuffix(u, "?"), "=")
		names := strings.Split(u, ",")
		key := names[len(names)-1]
		for _, n := range names {
			if len(n) > 1 {
				key = n
			}
		}
		s.unimp[key] = true
	}
	return s
}

// check is the tool's Check.
func (s *fuSpec) check(args []string) error {
	opts, _, err := s.opts.Parse(args)
	if err != nil {
		return fmt.Errorf("%s: %w", err, shell.ErrUnsupported)
	}
	for _, o := range opts {
		if s.unimp[o.Key] {
			return fmt.Errorf("option %s: %w", o.Name, shell.ErrUnsupported)
		}
	}
	return nil
}

// parse parses c.Args; when it returns ok false, the tool returns status.
func (s *fuSpec) parse(c *shell.Call, usageStatus int) (opts []Opt, operands []string, status int, ok bool) {
	opts, operands, err := s.opts.Parse(c.Args[1:])
	if err != nil {
		return nil, nil, usage(c, err, usageStatus), false
	}
	for _, o := range opts {
		if s.unimp[o.Key] {
			return nil, nil, c.Fail("option " + o.Name), false
		}
	}
	return opts, operands, 0, true
}

// fuStat is the part of stat(2) the file tools print.
type fuStat struct {
	Dev, Ino, Nlink, Rdev uint64
	Mode, Uid, Gid        uint32
	Size, Blocks, Blksize int64
	Atim, Mtim, Ctim      time.Time
	Btim                  time.Time // zero when unknown
}

// fuStatOf extracts the raw stat fields from a FileInfo made by storage
// (a *unix.Stat_t) or by os (a *syscall.Stat_t, from DirEntry.Info).
func fuStatOf(fi fs.FileInfo) fuStat {
	switch st := fi.Sys().(type) {
	case *unix.Stat_t:
		return fuStatOfUnix(st)
	case *syscall.Stat_t:
		return fuStat{Dev: st.Dev, Ino: st.Ino, Nlink: st.Nlink, Rdev: st.Rdev, Mode: st.Mode, Uid: st.Uid, Gid: st.Gid,
			Size: st.Size, Blocks: st.Blocks, Blksize: st.Blksize,
			Atim: time.Unix(st.Atim.Unix()), Mtim: time.Unix(st.Mtim.Unix()), Ctim: time.Unix(st.Ctim.Unix())}
	}
	// A FileInfo without stat data: synthesise what we can.
	m := uint32(fi.Mode().Perm())
	switch {
	case fi.IsDir():
		m |= unix.S_IFDIR
	case fi.Mode()&fs.ModeSymlink != 0:
		m |= unix.S_IFLNK
	default:
		m |= unix.S_IFREG
	}
	return fuStat{Mode: m, Nlink: 1, Size: fi.Size(), Mtim: fi.ModTime(), Atim: fi.ModTime(), Ctim: fi.ModTime()}
}

// fuStatOfUnix is fuStatOf for a raw stat result.
func fuStatOfUnix(st *unix.Stat_t) fuStat {
	return fuStat{Dev: st.Dev, Ino: st.Ino, Nlink: st.Nlink, Rdev: st.Rdev, Mode: st.Mode, Uid: st.Uid, Gid: st.Gid,
		Size: st.Size, Blocks: st.Blocks, Blksize: st.Blksize,
		Atim: time.Unix(st.Atim.Unix()), Mtim: time.Unix(st.Mtim.Unix()), Ctim: time.Unix(st.Ctim.Unix())}
}

func (s *fuStat) isDir() bool  { return s.Mode&unix.S_IFMT == unix.S_IFDIR }
func (s *fuStat) isLink() bool { return s.Mode&unix.S_IFMT == unix.S_IFLNK }
func (s *fuStat) isReg() bool  { return s.Mode&unix.S_IFMT == unix.S_IFREG }

// fuLstat and fuStatPath stat a sandbox path.
func fuLstat(c *shell.Call, name string) (fuStat, error) {
	fi, err := c.FS.Lstat(c.Abs(name))
	if err != nil {
		return fuStat{}, err
	}
	return fuStatOf(fi), nil
}

func fuStatPath(c *shell.Call, name string) (fuStat, error) {
	fi, err := c.FS.Stat(c.Abs(name))
	if err != nil {
		return fuStat{}, err
	}
	return fuStatOf(fi), nil
}

// fuModeString renders st_mode as ls -l does: "drwxr-xr-x".
func fuModeString(m uint32) string {
	return string(fuAppendMode(nil, m))
}

// fuAppendMode appends st_mode rendered as ls -l does to dst.
func fuAppendMode(dst []byte, m uint32) []byte {
	n := len(dst)
	dst = append(dst, "?rwxrwxrwx"...)
	b := dst[n:]
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		b[0] = '-'
	case unix.S_IFDIR:
		b[0] = 'd'
	case unix.S_IFLNK:
		b[0] = 'l'
	case unix.S_IFIFO:
		b[0] = 'p'
	case unix.S_IFSOCK:
		b[0] = 's'
	case unix.S_IFCHR:
		b[0] = 'c'
	case unix.S_IFBLK:
		b[0] = 'b'
	}
	for i := 0; i < 9; i++ {
		if m&(1<<(8-i)) == 0 {
			b[i+1] = '-'
		}
	}
	fix := func(i int, bit uint32, set, unset byte) {
		if m&bit != 0 {
			if b[i] == '-' {
				b[i] = unset
			} else {
				b[i] = set
			}
		}
	}
	fix(3, unix.S_ISUID, 's', 'S')
	fix(6, unix.S_ISGID, 's', 'S')
	fix(9, unix.S_ISVTX, 't', 'T')
	return dst
}

// owners names file owners the way GNU tools do inside the sandbox's
// container: from the /etc/passwd and /etc/group the sandbox sees (the
// image's, or the sandbox's own edits), read once per call; an id they
// do not name prints as its number. A view that cannot read them (one
// without the image's root refuses the path, and the exec goes to the
// container) names only root, which every image has as 0.
type owners struct {
	c            *shell.Call
	loaded       bool
	users, group map[uint32]string
}

func newOwners(c *shell.Call) *owners { return &owners{c: c} }

func (o *owners) load() {
	if o.loaded {
		return
	}
	o.loaded = true
	o.users, o.group = readIDNames(o.c, "/etc/passwd"), readIDNames(o.c, "/etc/group")
}

// readIDNames reads name:x:id:... lines: the first name of each id wins,
// as getpwuid's linear scan of the file does.
func readIDNames(c *shell.Call, path string) map[uint32]string {
	names := map[uint32]string{0: "root"}
	if c == nil || c.FS == nil {
		return names
	}
	f, err := c.Open(path)
	if err != nil {
		return names
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4<<20))
	if err != nil {
		return names
	}
	first := map[uint32]bool{}
	for line := range strings.SplitSeq(string(b), "\n") {
		fields := strings.SplitN(line, ":", 4)
		if len(fields) < 3 || fields[0] == "" || strings.HasPrefix(fields[0], "+") || strings.HasPrefix(fields[0], "-") {
			continue
		}
		id, err := strconv.ParseUint(fields[2], 10, 32)
		if err != nil || first[uint32(id)] {
			continue
		}
		first[uint32(id)] = true
		names[uint32(id)] = fields[0]
	}
	return names
}

func (o *owners) user(uid uint32) string {
	if uid != 0 {
		o.load()
	}
	if n, ok := o.users[uid]; ok {
		return n
	}
	if uid == 0 {
		return "root"
	}
	return strconv.FormatUint(uint64(uid), 10)
}

func (o *owners) groupName(gid uint32) string {
	if gid != 0 {
		o.load()
	}
	if n, ok := o.group[gid]; ok {
		return n
	}
	if gid == 0 {
		return "root"
	}
	return strconv.FormatUint(uint64(gid), 10)
}

// fuHuman formats n units of size unitSize as GNU's human_readable does
// with autoscaling, powers of base and rounding up (ls -h, du -h, df -h).
// block is the output block size (1 for -h sizes in bytes).
func fuHuman(n uint64, base uint64) string {
	const suffixes = "KMGTPEZYRQ"
	amt := n
	tenths, rounding := uint64(0), uint64(0)
	exp := 0
	var sb strings.Builder
	if amt >= base {
		for amt >= base && exp < len(suffixes) {
			r10 := (amt%base)*10 + tenths
			r2 := (r10%base)*2 + (rounding >> 1)
			amt /= base
			tenths = r10 / base
			switch {
			case r2 < base:
				if r2+rounding != 0 {
					rounding = 1
				} else {
					rounding = 0
				}
			case base < r2+rounding:
				rounding = 3
			default:
				rounding = 2
			}
			exp++
		}
		if amt < 10 {
			if rounding > 0 {
				tenths++
				rounding = 0
				if tenths == 10 {
					amt++
					tenths = 0
				}
			}
			if amt < 10 {
				fmt.Fprintf(&sb, "%d.%d%c", amt, tenths, suffixes[exp-1])
				return sb.String()
			}
			tenths = 0
		}
	}
	if tenths+rounding > 0 {
		amt++
		if exp > 0 && amt == base && exp < len(suffixes) {
			exp++
			return fmt.Sprintf("1.0%c", suffixes[exp-1])
		}
	}
	if exp == 0 {
		return strconv.FormatUint(amt, 10)
	}
	return fmt.Sprintf("%d%c", amt, suffixes[exp-1])
}

// fuCeilDiv divides rounding up.
func fuCeilDiv(a, b uint64) uint64 { return (a + b - 1) / b }

// fuErr returns GNU's text for a file error.
func fuErr(err error) string {
	if errors.Is(err, storage.ErrSpecialFile) {
		return "Operation not supported"
	}
	return shell.ErrText(err)
}

// fuQuotef quotes a file name as GNU's quotef does in "name: error"
// messages (shell-escape style, and a colon quoted too): as is unless
// the shell would need it quoted, then as fuQuote does.
func fuQuotef(name string) string {
	if !utf8.ValidString(name) {
		return fuQuote(name)
	}
	for i := 0; i < len(name); i++ {
		switch ch := name[i]; {
		case ch < 0x20 || ch == 0x7f || strings.IndexByte(" !\"$&'()*:;<=>?[\\^`|", ch) >= 0:
			return fuQuote(name)
		case (ch == '#' || ch == '~') && i == 0:
			return fuQuote(name)
		case (ch == '{' || ch == '}') && len(name) == 1:
			return fuQuote(name)
		}
	}
	if name == "" {
		return "''"
	}
	return name
}

// fuQuote quotes a file name as GNU's shell-escape-always style does
// (stat %N, -v messages, error messages): 'name'; "name" when it holds a
// single quote and nothing special inside double quotes; control
// characters as $'\n' pieces.
func fuQuote(name string) string {
	hasCtl := false
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] == 0x7f {
			hasCtl = true
			break
		}
	}
	if !hasCtl {
		if !strings.Contains(name, "'") {
			return "'" + name + "'"
		}
		if !strings.ContainsAny(name, "\"$`!\\") {
			return "\"" + name + "\""
		}
		return "'" + strings.ReplaceAll(name, "'", `'\''`) + "'"
	}
	var sb strings.Builder
	open := false
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if ch >= 0x20 && ch != 0x7f {
			if !open {
				sb.WriteByte('\'')
				open = true
			}
			if ch == '\'' {
				sb.WriteString(`'\''`)
				continue
			}
			sb.WriteByte(ch)
			continue
		}
		if open {
			sb.WriteByte('\'')
			open = false
		}
		sb.WriteString("$'")
		switch ch {
		case '\a':
			sb.WriteString(`\a`)
		case '\b':
			sb.WriteString(`\b`)
		case '\f':
			sb.WriteString(`\f`)
		case '\n':
			sb.WriteString(`\n`)
		case '\r':
			sb.WriteString(`\r`)
		case '\t':
			sb.WriteString(`\t`)
		case '\v':
			sb.WriteString(`\v`)
		default:
			fmt.Fprintf(&sb, "\\%03o", ch)
		}
		sb.WriteByte('\'')
	}
	if open {
		sb.WriteByte('\'')
	}
	return sb.String()
}

// fuErrno extracts the errno of a file error, or 0.
func fuErrno(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}

// fuCtxEvery returns a function that reports ctx's error every 1024 calls.
func fuCtxEvery(ctx context.Context) func() error {
	n := 0
	return func() error {
		n++
		if n&1023 == 0 {
			return ctx.Err()
		}
		return nil
	}
}

// fuLocation returns the time zone named by $TZ (default UTC). A TZ value
// Go cannot load (a POSIX rule string, say) falls back to UTC.
func fuLocation(c *shell.Call) *time.Location {
	tz, ok := c.LookupEnv("TZ")
	if !ok || tz == "" {
		return time.UTC
	}
	tz = strings.TrimPrefix(tz, ":")
	if loc, err := time.LoadLocation(tz); err == nil {
		return loc
	}
	return time.UTC
}

// fuJoin joins a directory and a name the way GNU tools build child paths.
func fuJoin(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// fuBase returns the last element of a path as basename(1) does
// (trailing slashes ignored).
func fuBase(p string) string {
	t := strings.TrimRight(p, "/")
	if t == "" {
		if p == "" {
			return ""
		}
		return "/"
	}
	if i := strings.LastIndexByte(t, '/'); i >= 0 {
		return t[i+1:]
	}
	return t
}

// fuVerbose writes a -v message ("name: text") on standard output.
func fuVerbose(c *shell.Call, format string, args ...any) {
	fmt.Fprintf(c.Stdout, "%s: %s\n", c.Name(), fmt.Sprintf(format, args...))
}

// fuDirEnt is one directory entry with its lstat result.
type fuDirEnt struct {
	name string
	st   fuStat
	ok   bool  // st is filled (from lstat, or from the entry's type)
	err  error // the lstat error when !ok
}

// fuReadDir reads directory dir in directory order. With stat set, each
// entry is lstat'ed relative to the open directory (fstatat on its
// descriptor). It never calls DirEntry.Info: for a file of the view,
// os's Info would lstat the sandbox path on the host's file system.
// Without stat, only the file type bits of st.Mode are set.
func fuReadDir(c *shell.Call, dir string, stat bool) ([]fuDirEnt, error) {
	ents, _, err := fuReadDirFlag(c, dir, stat, false, os.O_RDONLY)
	return ents, err
}

// fuReadDirSelf is fuReadDir for a caller that knows dir is a directory
// (ls): it opens dir with O_DIRECTORY, which storage.Root does in one
// openat2, and with self set it also returns the directory's own stat,
// which is what an lstat of "dir/." finds: the same directory, already
// open. That stat is nil when fstat fails.
func fuReadDirSelf(c *shell.Call, dir string, stat, self bool) ([]fuDirEnt, *fuStat, error) {
	return fuReadDirFlag(c, dir, stat, self, os.O_RDONLY|unix.O_DIRECTORY)
}

func fuReadDirFlag(c *shell.Call, dir string, stat, self bool, flag int) ([]fuDirEnt, *fuStat, error) {
	f, err := c.FS.OpenFile(c.Abs(dir), flag, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var selfSt *fuStat
	if self {
		if fi, err := f.Stat(); err == nil {
			st := fuStatOf(fi)
			selfSt = &st
		}
	}
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, nil, err
	}
	ents := make([]fuDirEnt, len(des))
	fder, hasFD := f.(interface{ Fd() uintptr })
	fd := -1
	if stat && hasFD {
		fd = int(fder.Fd())
	}
	for i, de := range des {
		e := &ents[i]
		e.name = de.Name()
		switch {
		case !stat:
			e.st.Mode = fuTypeBits(de.Type())
			e.ok = true
		case fd >= 0:
			var st unix.Stat_t
			if err := unix.Fstatat(fd, e.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				e.err = &fs.PathError{Op: "lstat", Path: fuJoin(dir, e.name), Err: err}
				continue
			}
			e.st, e.ok = fuStatOfUnix(&st), true
		default:
			e.st, e.err = fuLstat(c, fuJoin(dir, e.name))
			e.ok = e.err == nil
		}
	}
	return ents, selfSt, nil
}

// fuTypeBits converts a DirEntry type to st_mode file type bits.
func fuTypeBits(t fs.FileMode) uint32 {
	switch {
	case t.IsDir():
		return unix.S_IFDIR
	case t&fs.ModeSymlink != 0:
		return unix.S_IFLNK
	case t&fs.ModeNamedPipe != 0:
		return unix.S_IFIFO
	case t&fs.ModeSocket != 0:
		return unix.S_IFSOCK
	case t&fs.ModeCharDevice != 0:
		return unix.S_IFCHR
	case t&fs.ModeDevice != 0:
		return unix.S_IFBLK
	}
	return unix.S_IFREG
}
