package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"syscall"

	"rung.dev/rung/shell"
)

// grepOpts is grep's command line, as GNU grep 3.8 reads it.
var grepOpts = NewOptions(
	"E,extended-regexp", "F,fixed-strings", "G,basic-regexp", "P,perl-regexp",
	"e,regexp=", "f,file=", "i,ignore-case", "y", "no-ignore-case",
	"w,word-regexp", "x,line-regexp", "z,null-data", "s,no-messages",
	"v,invert-match", "m,max-count=", "b,byte-offset", "n,line-number",
	"line-buffered", "H,with-filename", "h,no-filename", "label=",
	"o,only-matching", "q,silent,quiet", "binary-files=", "a,text", "I",
	"d,directories=", "D,devices=", "r,recursive", "R,dereference-recursive",
	"include=", "exclude=", "exclude-dir=", "L,files-without-match",
	"l,files-with-matches", "c,count", "T,initial-tab", "Z,null",
	"A,after-context=", "B,before-context=", "C,context=",
	"color,colour=?", "U,binary", "no-group-separator", "group-separator=",
	"u,unix-byte-offsets", "V,version", "help", "exclude-from=", "no-line-number",
)

// grepConfig is one parsed grep invocation.
type grepConfig struct {
	mode                 byte // 'G', 'E', 'F'
	patterns             []string
	havePatterns         bool
	icase, word, line    bool
	invert, count        bool
	listMatch, listNone  bool
	quiet, noMsgs        bool
	only, byteOff, lineN bool
	withName             int // -1 never, 0 default, 1 always
	nullName             bool
	eol                  byte
	maxCount             int64 // -1: unlimited
	before, after        int
	ctxOn                bool // a context option was given, even 0: group separators
	groupSep             *string
	binary               string // "binary", "text", "without-match"
	label                string
	recursive            int // 0 no, 1 -r, 2 -R
	dirs                 string
	devSkip              bool
	globs                []grepGlob // --include/--exclude in order
	excludeDir           []string
}

type grepGlob struct {
	pat     string
	include bool
}

func addGrep(m map[string]shell.Tool) {
	for _, name := range []string{"grep", "egrep", "fgrep"} {
		m[name] = shell.Tool{Run: runGrep, Check: checkGrep}
	}
}

// grepUnsupported lists flags accepted by the parser but not implemented:
// they fail before any output.
func grepUnsupported(o Opt) string {
	switch o.Key {
	case "perl-regexp":
		return "option -P"
	case "initial-tab":
		return "option -T"
	case "version", "help":
		return "option " + o.Name
	case "exclude-from":
		return "option --exclude-from"
	case "colour":
		if o.HasArg && o.Value != "never" && o.Value != "auto" && o.Value != "none" && o.Value != "no" && o.Value != "tty" && o.Value != "if-tty" {
			return "option --color=" + o.Value
		}
	case "devices":
		if o.Value != "read" && o.Value != "skip" {
			return "option -D " + o.Value
		}
	}
	return ""
}

func checkGrep(args []string) error {
	opts, _, err := grepOpts.Parse(args)
	if err != nil {
		return fmt.Errorf("grep: %w: %w", err, shell.ErrUnsupported)
	}
	for _, o := range opts {
		if why := grepUnsupported(o); why != "" {
			return fmt.Errorf("grep: %s: %w", why, shell.ErrUnsupported)
		}
	}
	return nil
}

func grepUsage(c *shell.Call, msg string) int {
	if msg != "" {
		fmt.Fprintf(c.Stderr, "grep: %s\n", msg)
	}
	fmt.Fprintf(c.Stderr, "Usage: grep [OPTION]... PATTERNS [FILE]...\nTry 'grep --help' for more information.\n")
	return 2
}

func runGrep(ctx context.Context, c *shell.Call) int {
	opts, operands, err := grepOpts.Parse(c.Args[1:])
	if err != nil {
		return grepUsage(c, err.Error())
	}
	for _, o := range opts {
		if why := grepUnsupported(o); why != "" {
			return c.Fail(why)
		}
	}
	cfg := &grepConfig{mode: 'G', maxCount: -1, eol: '\n', binary: "binary", dirs: "read", before: -1, after: -1}
	switch c.Name() {
	case "egrep":
		cfg.mode = 'E'
	case "fgrep":
		cfg.mode = 'F'
	}
	ctxN := -1
	for _, o := range opts {
		if st := cfg.apply(c, o, &ctxN); st >= 0 {
			return st
		}
	}
	cfg.ctxOn = cfg.before >= 0 || cfg.after >= 0 || ctxN >= 0
	if cfg.before < 0 {
		cfg.before = max(ctxN, 0)
	}
	if cfg.after < 0 {
		cfg.after = max(ctxN, 0)
	}
	if !cfg.havePatterns {
		if len(operands) == 0 {
			return grepUsage(c, "")
		}
		cfg.patterns = strings.Split(operands[0], "\n")
		operands = operands[1:]
	}
	g, st := newGrepper(c, cfg)
	if st >= 0 {
		return st
	}
	// Like GNU, give up before reading anything when nothing can be
	// selected: -m 0, or -v with only empty patterns (no patterns at all,
	// as from -f /dev/null, count as an inverted empty pattern).
	allEmpty := true
	for _, p := range cfg.patterns {
		allEmpty = allEmpty && p == ""
	}
	inv := cfg.invert != (len(cfg.patterns) == 0)
	if (cfg.maxCount == 0 || allEmpty && inv && !cfg.line && !cfg.word) && !cfg.listNone {
		return 1
	}
	return g.run(ctx, operands)
}

// apply records one option; it returns an exit status to stop with, or -1.
func (cfg *grepConfig) apply(c *shell.Call, o Opt, ctxN *int) int {
	num := func() (int64, bool) {
		v, err := strconv.ParseInt(o.Value, 10, 64)
		return v, err == nil
	}
	switch o.Key {
	case "extended-regexp":
		cfg.mode = 'E'
	case "fixed-strings":
		cfg.mode = 'F'
	case "basic-regexp":
		cfg.mode = 'G'
	case "regexp":
		cfg.patterns = append(cfg.patterns, strings.Split(o.Value, "\n")...)
		cfg.havePatterns = true
	case "file":
		r, err := c.Open(o.Value)
		if err != nil {
			c.Errorf("%s: %s", o.Value, shell.ErrText(err))
			return 2
		}
		b, err := c.ReadAll(r)
		r.Close()
		if err != nil {
			c.Errorf("%s: %s", o.Value, shell.ErrText(err))
			return 2
		}
		s := string(b)
		if s != "" {
			s = strings.TrimSuffix(s, "\n")
			cfg.patterns = append(cfg.patterns, strings.Split(s, "\n")...)
		}
		cfg.havePatterns = true
	case "ignore-case", "y":
		cfg.icase = true
	case "no-ignore-case":
		cfg.icase = false
	case "word-regexp":
		cfg.word = true
	case "line-regexp":
		cfg.line = true
	case "null-data":
		cfg.eol = 0
	case "no-messages":
		cfg.noMsgs = true
	case "invert-match":
		cfg.invert = true
	case "max-count":
		v, ok := num()
		if !ok {
			c.Errorf("invalid max count")
			return 2
		}
		cfg.maxCount = v
		if v < 0 {
			cfg.maxCount = -1
		}
	case "byte-offset":
		cfg.byteOff = true
	case "line-number":
		cfg.lineN = true
	case "no-line-number":
		cfg.lineN = false
	case "with-filename":
		cfg.withName = 1
	case "no-filename":
		cfg.withName = -1
	case "label":
		cfg.label = o.Value
	case "only-matching":
		cfg.only = true
	case "quiet":
		cfg.quiet = true
	case "binary-files":
		switch o.Value {
		case "binary", "text", "without-match":
			cfg.binary = o.Value
		default:
			c.Errorf("unknown binary-files type")
			return 2
		}
	case "text":
		cfg.binary = "text"
	case "I":
		cfg.binary = "without-match"
	case "directories":
		switch o.Value {
		case "read", "skip":
			cfg.dirs = o.Value
		case "recurse":
			cfg.recursive = max(cfg.recursive, 1)
		default:
			return grepUsage(c, "invalid argument '"+o.Value+"' for '--directories'")
		}
	case "devices":
		cfg.devSkip = o.Value == "skip"
	case "recursive":
		cfg.recursive = 1
	case "dereference-recursive":
		cfg.recursive = 2
	case "include", "exclude":
		cfg.globs = append(cfg.globs, grepGlob{o.Value, o.Key == "include"})
	case "exclude-dir":
		cfg.excludeDir = append(cfg.excludeDir, o.Value)
	case "files-without-match":
		cfg.listNone, cfg.listMatch = true, false
	case "files-with-matches":
		cfg.listMatch, cfg.listNone = true, false
	case "count":
		cfg.count = true
	case "null":
		cfg.nullName = true
	case "after-context", "before-context", "context":
		v, ok := num()
		if !ok || v < 0 {
			c.Errorf("%s: invalid context length argument", o.Value)
			return 2
		}
		switch o.Key {
		case "after-context":
			cfg.after = int(min(v, 1<<30))
		case "before-context":
			cfg.before = int(min(v, 1<<30))
		default:
			*ctxN = int(min(v, 1<<30))
		}
	case "no-group-separator":
		cfg.groupSep = new(string)
		*cfg.groupSep = "\x00none"
	case "group-separator":
		s := o.Value
		cfg.groupSep = &s
	}
	return -1
}

// grepper runs one grep invocation over its operands.
type grepper struct {
	c       *shell.Call
	cfg     *grepConfig
	m       *grepMatcher
	out     *bufio.Writer
	showN   bool
	status  int  // 1 until a line is selected
	errSeen bool // some file could not be read
	outAny  bool // something was printed (for group separators)
	buf     []byte
	done    bool // -q matched: stop everything
}

func newGrepper(c *shell.Call, cfg *grepConfig) (*grepper, int) {
	m, warns, err := newGrepMatcher(cfg)
	for _, w := range warns {
		fmt.Fprintf(c.Stderr, "grep: warning: %s\n", w)
	}
	if err != nil {
		fmt.Fprintf(c.Stderr, "grep: %s\n", err)
		return nil, 2
	}
	return &grepper{c: c, cfg: cfg, m: m, status: 1}, -1
}

func (g *grepper) run(ctx context.Context, operands []string) int {
	cfg := g.cfg
	implicit := false
	if len(operands) == 0 {
		if cfg.recursive > 0 {
			operands = []string{"."}
			implicit = true
		} else {
			operands = []string{"-"}
		}
	}
	switch {
	case cfg.withName != 0:
		g.showN = cfg.withName > 0
	default:
		g.showN = len(operands) > 1 || cfg.recursive > 0 && !g.singleRegular(operands)
	}
	g.out = writers64K.get(g.c.Stdout)
	defer writers64K.put(g.out)
	bp := bytes96K.get()
	defer bytes96K.put(bp)
	g.buf = *bp
	for _, op := range operands {
		if g.done || ctx.Err() != nil {
			break
		}
		if op == "-" {
			g.searchStdin(ctx)
			continue
		}
		if !g.globOK(op, true) {
			continue
		}
		g.operand(ctx, op, implicit)
	}
	if err := g.out.Flush(); err != nil && !g.done {
		return 2
	}
	if ctx.Err() != nil {
		return 130
	}
	if g.errSeen && !(cfg.quiet && g.status == 0) {
		return 2
	}
	return g.status
}

// singleRegular reports whether operands is one regular file (GNU omits
// file names for grep -r on a single file).
func (g *grepper) singleRegular(operands []string) bool {
	if len(operands) != 1 || operands[0] == "-" {
		return len(operands) == 1 && operands[0] == "-"
	}
	fi, err := g.c.FS.Stat(g.c.Abs(operands[0]))
	return err == nil && fi.Mode().IsRegular()
}

func (g *grepper) searchStdin(ctx context.Context) {
	name := "(standard input)"
	if g.cfg.label != "" {
		name = g.cfg.label
	}
	g.search(ctx, g.c.Stdin, name, false)
}

func (g *grepper) fileErr(name string, err error) {
	g.errSeen = true
	if !g.cfg.noMsgs {
		fmt.Fprintf(g.c.Stderr, "grep: %s: %s\n", name, shell.ErrText(err))
	}
}

// operand searches a command-line file or directory.
func (g *grepper) operand(ctx context.Context, name string, implicit bool) {
	abs := g.c.Abs(name)
	fi, err := g.c.Stat(name)
	if err != nil {
		if g.cfg.recursive == 1 {
			if lfi, lerr := g.c.FS.Lstat(abs); lerr == nil && lfi.Mode()&fs.ModeSymlink != 0 {
				// A dangling symlink on the command line is still an error.
				g.fileErr(name, err)
				return
			}
		}
		g.fileErr(name, err)
		return
	}
	if fi.IsDir() {
		switch {
		case g.cfg.recursive > 0:
			if !implicit && g.dirExcluded(name) {
				return
			}
			prefix := name
			if implicit {
				prefix = ""
			}
			g.walk(ctx, abs, prefix)
		case g.cfg.dirs == "skip":
		default:
			g.fileErr(name, &fs.PathError{Op: "read", Path: name, Err: syscall.EISDIR})
		}
		return
	}
	g.searchFile(ctx, abs, name, fi)
}

func (g *grepper) searchFile(ctx context.Context, abs, name string, fi fs.FileInfo) {
	if !fi.Mode().IsRegular() && !fi.IsDir() && g.cfg.devSkip {
		return
	}
	var f io.ReadCloser
	var err error
	if shell.IsDevice(name) {
		f, err = g.c.Open(name)
	} else {
		f, err = g.c.FS.OpenFile(abs, 0, 0)
	}
	if err != nil {
		g.fileErr(name, err)
		return
	}
	defer f.Close()
	g.search(ctx, f, name, fi.Mode().IsRegular())
}

// globOK applies --include and --exclude: the last matching option wins;
// with none matching, a file is included unless the first is --include.
func (g *grepper) globOK(name string, cmdline bool) bool {
	if len(g.cfg.globs) == 0 {
		return true
	}
	base := name
	res := !g.cfg.globs[0].include
	matched := false
	for _, gl := range g.cfg.globs {
		if srchFnmatch(gl.pat, base) {
			res = gl.include
			matched = true
		}
	}
	if !matched {
		// Command-line files are searched unless an --exclude matches.
		if cmdline {
			return true
		}
		return !g.cfg.globs[0].include
	}
	return res
}

func (g *grepper) dirExcluded(name string) bool {
	for _, p := range g.cfg.excludeDir {
		if srchFnmatch(p, name) || srchFnmatch(p, strings.TrimRight(name, "/")) {
			return true
		}
	}
	return false
}

var grepErrBinaryStop = errors.New("binary file matches")
