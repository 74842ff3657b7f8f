package tools

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"rung.dev/rung/shell"
)

// ls lists directory contents like GNU ls 9.1. Standard output is never a
// terminal here, so the default format is one name per line (as GNU's is
// when piped) and names are printed literally. Owners: uid/gid 0 print as
// "root", others as numbers (the sandbox images name no other ids).

var lsSpec = fuNewSpec([]string{
	"a,all", "A,almost-all", "l", "h,human-readable", "R,recursive", "1", "d,directory",
	"t", "S", "r,reverse", "F,classify=?", "p", "i,inode", "n,numeric-uid-gid", "G,no-group",
	"o", "g", "color=?", "X", "v", "U", "c", "u", "time-style=", "full-time",
	"group-directories-first", "C", "x", "file-type", "s,size", "k,kibibytes", "sort=", "time=",
},
	"author", "b,escape", "block-size=", "B,ignore-backups", "D,dired", "f", "format=", "hide=",
	"hyperlink=?", "indicator-style=", "H,dereference-command-line",
	"dereference-command-line-symlink-to-dir", "I,ignore=", "L,dereference", "m", "N,literal",
	"q,hide-control-chars", "show-control-chars", "Q,quote-name", "quoting-style=", "si",
	"T,tabsize=", "w,width=", "Z,context", "zero", "help", "version",
)

type lsFormat int

const (
	lsOnePerLine lsFormat = iota
	lsLong
	lsColumns
	lsAcross
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
	w := bufio.NewWriterSize(c.Stdout, 64<<10)
	defer w.Flush()
	l := &lister{c: c, cfg: cfg, w: w, ctx: ctx, first: true}
	return l.run(args)
}

func lsParse(c *shell.Call, opts []Opt) (*lsConfig, int, bool) {
	cfg := &lsConfig{timeKind: 'm', loc: fuLocation(c), now: time.Now(), width: 80}
	for _, o := range opts {
		switch o.Key {
		case "all":
			cfg.all, cfg.almostAll = true, false
		case "almost-all":
			cfg.almostAll, cfg.all = true, false
		case "l":
			cfg.format = lsLong
		case "human-readable":
			cfg.human = true
		case "k":
			cfg.human = false
		case "recursive":
			cfg.recursive = true
		case "1":
			cfg.format = lsOnePerLine
		case "C":
			cfg.format = lsColumns
		case "x":
			cfg.format = lsAcross
		case "directory":
			cfg.dirsSelf = true
		case "t":
			cfg.sort, cfg.sortSet = lsByTime, true
		case "S":
			cfg.sort, cfg.sortSet = lsBySize, true
		case "X":
			cfg.sort, cfg.sortSet = lsByExt, true
		case "v":
			cfg.sort, cfg.sortSet = lsByVersion, true
		case "U":
			cfg.sort, cfg.sortSet = lsByNone, true
		case "reverse":
			cfg.reverse = true
		case "classify":
			switch o.Value {
			case "", "always", "yes", "force":
				cfg.indicator = 'F'
			case "never", "no", "none":
				cfg.indicator = 0
			case "auto", "tty", "if-tty":
				// Standard output is never a terminal here.
			default:
				c.Errorf("invalid argument %s for '--classify'", fuQuote(o.Value))
				return nil, 1, false
			}
		case "p":
			cfg.indicator = 'p'
		case "file-type":
			cfg.indicator = 't'
		case "inode":
			cfg.inode = true
		case "size":
			cfg.size = true
		case "numeric-uid-gid":
			cfg.numeric, cfg.format = true, lsLong
		case "no-group":
			cfg.noGroup = true
		case "o":
			cfg.noGroup, cfg.format = true, lsLong
		case "g":
			cfg.noOwner, cfg.format = true, lsLong
		case "color":
			switch o.Value {
			case "never", "no", "none", "auto", "tty", "if-tty":
			case "", "always", "yes", "force":
				return nil, c.Fail("option --color=always"), false
			default:
				c.Errorf("invalid argument %s for '--color'", fuQuote(o.Value))
				return nil, 1, false
			}
		case "c":
			cfg.timeKind = 'c'
		case "u":
			cfg.timeKind = 'a'
		case "sort":
			m := map[string]lsSort{"none": lsByNone, "size": lsBySize, "time": lsByTime, "version": lsByVersion,
				"extension": lsByExt, "name": lsByName}
			v, ok := m[o.Value]
			if !ok {
				if o.Value == "width" {
					return nil, c.Fail("option --sort=width"), false
				}
				c.Errorf("invalid argument %s for '--sort'", fuQuote(o.Value))
				return nil, 1, false
			}
			cfg.sort, cfg.sortSet = v, true
		case "time":
			switch o.Value {
			case "atime", "access", "use":
				cfg.timeKind = 'a'
			case "ctime", "status":
				cfg.timeKind = 'c'
			case "birth", "creation":
				return nil, c.Fail("option --time=" + o.Value), false
			default:
				c.Errorf("invalid argument %s for '--time'", fuQuote(o.Value))
				return nil, 1, false
			}
		case "time-style":
			cfg.timeStyle = o.Value
		case "full-time":
			cfg.format, cfg.timeStyle = lsLong, "full-iso"
		case "group-directories-first":
			cfg.dirsFirst = true
		}
	}
	if cfg.sort == lsByNone && cfg.all {
		// Where "." and ".." fall in directory order is not visible
		// through the file view's ReadDir.
		return nil, c.Fail("options -U with -a"), false
	}
	if cfg.timeKind != 'm' && !cfg.sortSet && cfg.format != lsLong {
		cfg.sort = lsByTime
	}
	if v, ok := c.LookupEnv("COLUMNS"); ok {
		if n, err := parseIntStrict(v); err == nil && n > 0 {
			cfg.width = n
		}
	}
	if cfg.timeStyle == "" {
		cfg.timeStyle = c.Getenv("TIME_STYLE")
	}
	st := strings.TrimPrefix(cfg.timeStyle, "posix-")
	switch {
	case cfg.format != lsLong:
		// GNU looks at the time style only for long listings.
	case st == "" || st == "locale" || st == "full-iso" || st == "long-iso" || st == "iso":
		cfg.timeStyle = st
	case strings.HasPrefix(st, "+"):
		if _, ok := fuStrftime(strings.SplitN(st[1:], "\n", 2)[0], time.Time{}); !ok {
			return nil, c.Fail("time style " + st), false
		}
		cfg.timeStyle = st
	default:
		c.Errorf("invalid argument %s for 'time style'", fuQuote(cfg.timeStyle))
		return nil, 2, false
	}
	return cfg, 0, true
}

func parseIntStrict(s string) (int, error) {
	n := 0
	if s == "" {
		return 0, os.ErrInvalid
	}
	for _, r := range s {
		if r < '0' || r > '9' || n > 1<<30 {
			return 0, os.ErrInvalid
		}
		n = n*10 + int(r-'0')
	}
	return n, nil
}

// lister carries the state of one ls run.
type lister struct {
	c      *shell.Call
	cfg    *lsConfig
	w      *bufio.Writer
	ctx    context.Context
	status int
	first  bool // no directory header printed yet
	multi  bool // print directory headers
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
	derefArgs := !(l.cfg.dirsSelf || l.cfg.indicator == 'F' || l.cfg.format == lsLong)
	var ents []*lsEntry
	for _, a := range args {
		e := &lsEntry{name: a, path: a}
		st, err := fuLstat(l.c, a)
		if err == nil && st.isLink() && derefArgs {
			if tst, terr := fuStatPath(l.c, a); terr == nil && tst.isDir() {
				st = tst
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
	l.multi = len(args) > 1 || l.cfg.recursive
	if len(files) > 0 {
		// GNU sizes the columns of command-line files over every operand.
		l.printEntries(files, ents)
		if len(dirs) > 0 {
			l.w.WriteByte('\n')
		}
	}
	for _, d := range dirs {
		if err := l.listDir(d.path); err != nil {
			l.fail(2)
			return l.status
		}
	}
	if err := l.w.Flush(); err != nil {
		l.fail(2)
	}
	return l.status
}

// fillLink reads a symlink's target when the format shows it.
func (l *lister) fillLink(e *lsEntry) {
	if !e.statOK || !e.st.isLink() || l.cfg.format != lsLong {
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
func (l *lister) listDir(dir string) error {
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
	if err != nil {
		l.w.Flush()
		l.c.Errorf("cannot open directory %s: %s", fuQuote(dir), fuErr(err))
		l.fail(2)
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
			if err := l.listDir(e.path); err != nil {
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
	needStat := cfg.format == lsLong || cfg.inode || cfg.size || cfg.indicator == 'F' ||
		cfg.sort == lsByTime || cfg.sort == lsBySize || cfg.format == lsColumns || cfg.format == lsAcross
	des, err := fuReadDir(l.c, dir, needStat)
	if err != nil {
		return nil, err
	}
	var ents []*lsEntry
	if cfg.all {
		for _, n := range []string{".", ".."} {
			e := &lsEntry{name: n, path: fuJoin(dir, n)}
			if st, err := fuLstat(l.c, e.path); err == nil {
				e.st, e.statOK = st, true
			}
			ents = append(ents, e)
		}
	}
	tick := fuCtxEvery(l.ctx)
	for _, de := range des {
		if err := tick(); err != nil {
			return nil, err
		}
		n := de.name
		if n[0] == '.' && !cfg.all && !cfg.almostAll {
			continue
		}
		e := &lsEntry{name: n, path: fuJoin(dir, n), st: de.st, statOK: de.ok}
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

// lsCheck is ls's Check: unknown or unimplemented flags, and flag values
// that run time would refuse (--color=always, --sort=width, -U with -a...).
func lsCheck(args []string) error {
	if err := lsSpec.check(args); err != nil {
		return err
	}
	opts, _, _ := lsSpec.opts.Parse(args)
	all, unsorted := false, false
	for _, o := range opts {
		bad := false
		switch o.Key {
		case "color":
			bad = o.Value == "" || o.Value == "always" || o.Value == "yes" || o.Value == "force"
		case "sort":
			bad = o.Value == "width"
			unsorted = o.Value == "none"
		case "time":
			bad = o.Value == "birth" || o.Value == "creation"
		case "U":
			unsorted = true
		case "t", "S", "X", "v":
			unsorted = false
		case "all":
			all = true
		case "almost-all":
			all = false
		}
		if bad {
			return fmt.Errorf("option %s=%s: %w", o.Name, o.Value, shell.ErrUnsupported)
		}
	}
	if all && unsorted {
		return fmt.Errorf("options -U with -a: %w", shell.ErrUnsupported)
	}
	return nil
}
