package tools

import (
	"bufio"
	"context"
	"sync"
	"time"

	"rung.dev/rung/shell"
)

// ls lists directory contents like GNU ls 9.1. Standard output is never a
// terminal here, so the default format is one name per line (as GNU's is
// when piped) and names are printed literally. Owners: uid/gid 0 print as
// "root", others as numbers (the sandbox images name no other ids).

var lsSpec = fuNewSpec([]string{
	"a,all", "A,almost-all", "l", "h,human-readable", "R,recursive", "1", "d,directory",
	"t", "S", "r,reverse", "F,classify=*", "p", "i,inode", "n,numeric-uid-gid", "G,no-group",
	"o", "g", "color=?", "X", "v", "U", "c", "u", "time-style=", "full-time",
	"group-directories-first", "C", "x", "file-type", "s,size", "k,kibibytes", "sort=", "time=",
	"I,ignore=", "hide=", "B,ignore-backups", "w,width=", "T,tabsize=", "hyperlink=?", "m",
	"format=", "indicator-style=", "b,escape", "N,literal", "q,hide-control-chars",
	"show-control-chars", "Q,quote-name", "quoting-style=", "Z,context", "L,dereference",
	"H,dereference-command-line",
},
	"author", "block-size=", "D,dired", "f",
	"dereference-command-line-symlink-to-dir", "si", "zero", "help", "version",
)

type lsFormat int

const (
	lsOnePerLine lsFormat = iota
	lsLong
	lsColumns
	lsAcross
	lsCommas
)

type lsSort int

const (
	lsByName lsSort = iota
	lsByNone
	lsByTime
	lsBySize
	lsByExt
	lsByVersion
)

// lsConfig is one invocation's settings.
type lsConfig struct {
	all, almostAll, recursive, dirsSelf, reverse, human, inode, numeric bool
	noOwner, noGroup, dirsFirst, size, sortSet                          bool
	format                                                              lsFormat
	sort                                                                lsSort
	indicator                                                           byte // 0, 'F' classify, 'p' slash, 't' file-type
	timeKind                                                            byte // 'm', 'c', 'a'
	timeStyle                                                           string
	loc                                                                 *time.Location
	now                                                                 time.Time
	width                                                               int
	// ignore are -I's patterns, hide --hide's (which -a and -A undo).
	ignore, hide []string
	// quoting is the quoting style of printed names ("literal",
	// "escape", "c", "shell", "shell-always", "shell-escape",
	// "shell-escape-always"); hideCtl prints control characters as ?.
	quoting string
	hideCtl bool
	// context: -Z, a "?" security context before each name.
	context bool
	// deref: -L, every symlink stands for its target; derefArgs: -H,
	// those named on the command line.
	deref, derefArgs bool
}

// lsEntry is one file to print.
type lsEntry struct {
	name   string // as printed
	path   string // sandbox path (absolute or relative to c.Dir)
	st     fuStat
	statOK bool
	target string // symlink target, long format
	tst    fuStat // symlink target's stat
	tOK    bool
	cmdDir bool // a command-line directory to list
	// deadLink: -L could not follow this symlink (statOK is false).
	deadLink bool
}

func runLs(ctx context.Context, c *shell.Call) int {
	opts, args, status, ok := lsSpec.parse(c, 2)
	if !ok {
		return status
	}
	cfg, status, ok := lsParse(c, opts)
	if !ok {
		return status
	}
	w := writers64K.get(c.Stdout)
	defer writers64K.put(w)
	defer w.Flush()
	l := listers.Get().(*lister)
	defer l.release()
	l.c, l.cfg, l.w, l.ctx, l.first = c, cfg, w, ctx, true
	return l.run(args)
}

// listers keeps listers, with their scratch buffers, between runs.
var listers = sync.Pool{New: func() any { return new(lister) }}

// release clears l, keeping its buffers (emptied, so they hold no
// strings), and puts it back in listers.
func (l *lister) release() {
	scratch := l.scratch[:0]
	ents := l.entBuf[:0]
	clear(l.entBuf[:cap(l.entBuf)])
	cols := l.colsBuf[:0]
	clear(l.colsBuf[:cap(l.colsBuf)])
	*l = lister{scratch: scratch, entBuf: ents, colsBuf: cols}
	listers.Put(l)
}

// lister carries the state of one ls run.
type lister struct {
	c      *shell.Call
	own    *owners // made at the first long listing
	cfg    *lsConfig
	w      *bufio.Writer
	ctx    context.Context
	status int
	first  bool // no directory header printed yet
	multi  bool // print directory headers
	// dotUnchecked: the lone operand "." was not lstat'ed (see run).
	dotUnchecked bool
	// scratch is reused for rendering a mode string.
	scratch []byte
	// entBuf holds the entries of the first directory read (readDir);
	// entBufUsed is set once it is taken. colsBuf is printLong's.
	entBuf     []lsEntry
	entBufUsed bool
	colsBuf    []lsLongCols
	// The last default-style time rendering, by Unix second (formatTime).
	lastSec    int64
	lastRecent bool
	lastTime   string
}

func (l *lister) fail(st int) {
	if st > l.status {
		l.status = st
	}
}

func (l *lister) run(args []string) int {
	if len(args) == 0 {
		args = []string{"."}
	}
	derefArgs := !(l.cfg.dirsSelf || l.cfg.indicator == 'F' || l.cfg.format == lsLong) || l.cfg.deref || l.cfg.derefArgs
	var ents []*lsEntry
	nargs := len(args)
	if len(args) == 1 && args[0] == "." && !l.cfg.dirsSelf && !l.cfg.recursive {
		// The lone operand ".": a directory (or an error), never a
		// symlink, and its stat is not printed. Its lstat is left out;
		// if opening it fails, listDir makes it and reports as below.
		l.dotUnchecked = true
		args = nil
		ents = append(ents, &lsEntry{name: ".", path: ".", cmdDir: true})
	}
	for _, a := range args {
		e := &lsEntry{name: a, path: a}
		st, err := fuLstat(l.c, a)
		if err == nil && st.isLink() && derefArgs {
			tst, terr := fuStatPath(l.c, a)
			switch {
			case terr == nil && (tst.isDir() || l.cfg.deref || l.cfg.derefArgs):
				st = tst
			case terr != nil && (l.cfg.deref || l.cfg.derefArgs):
				err = terr
			}
		}
		if err != nil {
			l.c.Errorf("cannot access %s: %s", fuQuote(a), fuErr(err))
			l.fail(2)
			continue
		}
		e.st, e.statOK = st, true
		e.cmdDir = st.isDir() && !l.cfg.dirsSelf
		l.fillLink(e)
		ents = append(ents, e)
	}
	l.sortEntries(ents)
	var files, dirs []*lsEntry
	for _, e := range ents {
		if e.cmdDir {
			dirs = append(dirs, e)
		} else {
			files = append(files, e)
		}
	}
	l.multi = nargs > 1 || l.cfg.recursive
	if len(files) > 0 {
		// GNU sizes the columns of command-line files over every operand.
		l.printEntries(files, ents)
		if len(dirs) > 0 {
			l.w.WriteByte('\n')
		}
	}
	for _, d := range dirs {
		if err := l.listDir(d.path, true); err != nil {
			l.fail(2)
			return l.status
		}
	}
	if err := l.w.Flush(); err != nil {
		l.fail(2)
	}
	return l.status
}

// fillLink reads a symlink's target when the format shows it, or when
// --group-directories-first must know whether it names a directory.
func (l *lister) fillLink(e *lsEntry) {
	if !e.statOK || !e.st.isLink() || l.cfg.format != lsLong && !l.cfg.dirsFirst {
		return
	}
	t, err := l.c.FS.Readlink(l.c.Abs(e.path))
	if err != nil {
		return
	}
	e.target = t
	if tst, err := fuStatPath(l.c, e.path); err == nil {
		e.tst, e.tOK = tst, true
	}
}

// listDir prints one directory (and, with -R, its subdirectories).
func (l *lister) listDir(dir string, cmdLine bool) error {
	if err := l.ctx.Err(); err != nil {
		return err
	}
	if l.multi {
		if !l.first {
			l.w.WriteByte('\n')
		}
		l.first = false
		l.w.WriteString(dir)
		l.w.WriteString(":\n")
	}
	ents, err := l.readDir(dir)
	if err != nil && l.dotUnchecked {
		l.dotUnchecked = false
		if _, lerr := fuLstat(l.c, dir); lerr != nil {
			l.w.Flush()
			l.c.Errorf("cannot access %s: %s", fuQuote(dir), fuErr(lerr))
			l.fail(2)
			return nil
		}
	}
	if err != nil {
		l.w.Flush()
		l.c.Errorf("cannot open directory %s: %s", fuQuote(dir), fuErr(err))
		// GNU: serious trouble for an operand, minor below it.
		if cmdLine {
			l.fail(2)
		} else {
			l.fail(1)
		}
		return nil
	}
	l.sortEntries(ents)
	if l.cfg.format == lsLong || l.cfg.size {
		var blocks int64
		for _, e := range ents {
			blocks += e.st.Blocks
		}
		l.w.WriteString("total ")
		l.w.WriteString(l.blocks(blocks))
		l.w.WriteByte('\n')
	}
	l.printEntries(ents, ents)
	if !l.cfg.recursive {
		return nil
	}
	for _, e := range ents {
		if e.statOK && e.st.isDir() && e.name != "." && e.name != ".." {
			if err := l.listDir(e.path, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// readDir reads dir's entries, lstat'ed when the output needs more than
// their types.
func (l *lister) readDir(dir string) ([]*lsEntry, error) {
	cfg := l.cfg
	needStat := cfg.deref || cfg.format == lsLong || cfg.inode || cfg.size || cfg.indicator == 'F' ||
		cfg.sort == lsByTime || cfg.sort == lsBySize || cfg.format == lsColumns || cfg.format == lsAcross
	des, self, err := fuReadDirSelf(l.c, dir, needStat, cfg.all)
	if err != nil {
		return nil, err
	}
	// The entries are carved from one slice: one allocation, not one
	// each, and none for the first directory of a run once l.entBuf has
	// grown (the lister is reused).
	var pool []lsEntry
	if !l.entBufUsed && cap(l.entBuf) >= len(des)+2 {
		pool, l.entBufUsed = l.entBuf[:0], true
	} else {
		pool = make([]lsEntry, 0, len(des)+2)
		if !l.entBufUsed && len(des) < 256 {
			l.entBuf, l.entBufUsed = pool, true
		}
	}
	newEntry := func(e lsEntry) *lsEntry {
		pool = append(pool, e)
		return &pool[len(pool)-1]
	}
	ents := make([]*lsEntry, 0, len(des)+2)
	if cfg.all {
		// "." is the directory just read; ".." stays a path lookup,
		// which the view keeps inside the sandbox.
		dot := newEntry(lsEntry{name: ".", path: fuJoin(dir, ".")})
		if self != nil {
			dot.st, dot.statOK = *self, true
		}
		dotdot := newEntry(lsEntry{name: "..", path: fuJoin(dir, "..")})
		if st, err := fuLstat(l.c, dotdot.path); err == nil {
			dotdot.st, dotdot.statOK = st, true
		}
		ents = append(ents, dot, dotdot)
	}
	tick := fuCtxEvery(l.ctx)
	for _, de := range des {
		if err := tick(); err != nil {
			return nil, err
		}
		n := de.name
		if n[0] == '.' && !cfg.all && !cfg.almostAll || l.ignored(n) {
			continue
		}
		e := newEntry(lsEntry{name: n, path: fuJoin(dir, n), st: de.st, statOK: de.ok})
		if cfg.deref && de.ok && de.st.isLink() {
			if tst, err := fuStatPath(l.c, e.path); err == nil {
				e.st = tst
			} else {
				l.w.Flush()
				shown := e.path
				if dir == "." {
					shown = n
				}
				l.c.Errorf("cannot access %s: %s", fuQuote(shown), fuErr(err))
				l.fail(1)
				e.statOK, e.deadLink = false, true
			}
		}
		if !de.ok {
			l.w.Flush()
			l.c.Errorf("cannot access %s: %s", fuQuote(e.path), fuErr(de.err))
			l.fail(1)
		}
		l.fillLink(e)
		ents = append(ents, e)
	}
	return ents, nil
}

// blocks renders a count of 512-byte blocks as ls prints totals.
func (l *lister) blocks(n int64) string {
	if l.cfg.human {
		return fuHuman(uint64(n)*512, 1024)
	}
	return itoa64(int64(fuCeilDiv(uint64(n)*512, 1024)))
}

func itoa64(n int64) string {
	if n < 0 {
		return "-" + itoa64(-n)
	}
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return string(b[i:])
}

// indicator returns the -F/-p/--file-type suffix for mode.
func (l *lister) indicator(mode uint32, ok bool) string {
	if l.cfg.indicator == 0 || !ok {
		return ""
	}
	st := fuStat{Mode: mode}
	switch {
	case st.isReg():
		if l.cfg.indicator == 'F' && mode&0o111 != 0 {
			return "*"
		}
		return ""
	case st.isDir():
		return "/"
	case l.cfg.indicator == 'p':
		return ""
	case st.isLink():
		return "@"
	}
	switch mode & 0o170000 {
	case 0o010000:
		return "|"
	case 0o140000:
		return "="
	}
	return ""
}
