package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"rung.dev/rung/shell"
)

// find walks the file view in name order (storage.FS.ReadDir sorts),
// where GNU find walks in readdir(3) order: the same set of lines, in an
// order GNU leaves to the file system.

func addFind(m map[string]shell.Tool) {
	m["find"] = shell.Tool{Run: runFind, Check: checkFind}
}

// checkFind rejects the expression elements find refuses at run time.
func checkFind(args []string) error {
	f := &finder{c: &shell.Call{Args: append([]string{"find"}, args...)}, maxDepth: -1}
	_, expr := f.splitArgs(args)
	p := &findParser{f: f, args: expr}
	_, err := p.parse()
	var un *findUnsupported
	if errors.As(err, &un) {
		return fmt.Errorf("find: %s: %w", un.what, shell.ErrUnsupported)
	}
	if err != nil {
		// A predicate this parser lacks may be one GNU find has.
		return fmt.Errorf("find: %v: %w", err, shell.ErrUnsupported)
	}
	return nil
}

// finder is one find invocation.
type finder struct {
	c          *shell.Call
	ctx        context.Context
	out        *bufio.Writer
	now        time.Time
	follow     byte // 'P' (default), 'L', 'H'
	maxDepth   int  // -1: none
	minDepth   int
	depthFirst bool
	quit       bool
	status     int
	batches    []*findBatch
	visited    int
	own        *owners // names for -printf %u %g, made at first use
}

// findEnt is one file met by the walk.
type findEnt struct {
	f      *finder
	path   string // as printed
	abs    string // sandbox path
	start  string // the starting point it was found under
	depth  int
	isTop  bool
	fi     fs.FileInfo // lstat or stat, per -P/-L/-H
	other  fs.FileInfo // the other one, for -xtype
	gotOth bool
	pruned bool
}

func (e *findEnt) info() fs.FileInfo { return e.fi }

func (e *findEnt) stat() *unix.Stat_t {
	if e.fi == nil {
		return nil
	}
	st, _ := e.fi.Sys().(*unix.Stat_t)
	return st
}

func (e *findEnt) isLink() bool {
	if e.fi != nil && e.fi.Mode()&fs.ModeSymlink != 0 {
		return true
	}
	l, err := e.f.c.FS.Lstat(e.abs)
	return err == nil && l.Mode()&fs.ModeSymlink != 0
}

// otherInfo is stat when the walk uses lstat and lstat otherwise.
func (e *findEnt) otherInfo() fs.FileInfo {
	if !e.gotOth {
		e.gotOth = true
		follows := e.f.follow == 'L' || e.f.follow == 'H' && e.isTop
		var err error
		if follows {
			e.other, err = e.f.c.FS.Lstat(e.abs)
		} else {
			e.other, err = e.f.c.FS.Stat(e.abs)
			if err != nil {
				e.other = e.fi // a dangling link is a link for -xtype
			}
		}
		if err != nil && follows {
			e.other = nil
		}
	}
	return e.other
}

func (e *findEnt) baseName() string {
	p := strings.TrimRight(e.path, "/")
	if p == "" {
		return "/"
	}
	return path.Base(p)
}

// splitArgs separates leading options and starting points from the
// expression.
func (f *finder) splitArgs(args []string) ([]string, []string) {
	i := 0
opts:
	for i < len(args) {
		switch args[i] {
		case "-P", "-L", "-H":
			f.follow = args[i][1]
			i++
		case "--":
			i++
			break opts
		default:
			break opts
		}
	}
	j := i
	for j < len(args) {
		a := args[j]
		if (strings.HasPrefix(a, "-") && a != "-") || a == "(" || a == "!" {
			break
		}
		j++
	}
	return args[i:j], args[j:]
}

func runFind(ctx context.Context, c *shell.Call) int {
	f := &finder{c: c, ctx: ctx, follow: 'P', maxDepth: -1, now: time.Now()}
	args := c.Args[1:]
	if len(args) > 0 && (strings.HasPrefix(args[0], "-D") || strings.HasPrefix(args[0], "-O")) {
		return c.Fail("option " + args[0])
	}
	starts, expr := f.splitArgs(args)
	f.out = bufio.NewWriterSize(c.Stdout, 64<<10)
	defer f.out.Flush()
	p := &findParser{f: f, args: expr}
	pred, err := p.parse()
	if err != nil {
		var un *findUnsupported
		if errors.As(err, &un) {
			return c.Fail(un.what)
		}
		fmt.Fprintf(c.Stderr, "find: %s\n", err)
		return 1
	}
	if !p.hasAction {
		inner := pred
		pred = func(e *findEnt) bool {
			if inner(e) {
				f.out.WriteString(e.path)
				f.out.WriteByte('\n')
			}
			return true
		}
	}
	if len(starts) == 0 {
		starts = []string{"."}
	}
	for _, s := range starts {
		if f.quit || ctx.Err() != nil {
			break
		}
		if s == "" {
			fmt.Fprintf(c.Stderr, "find: ‘’: No such file or directory\n")
			f.status = 1
			continue
		}
		f.walkStart(s, pred)
	}
	f.flushBatches()
	if ctx.Err() != nil {
		return 130
	}
	return f.status
}

func (f *finder) errf(p string, err error) {
	f.out.Flush()
	fmt.Fprintf(f.c.Stderr, "find: ‘%s’: %s\n", p, shell.ErrText(err))
	f.status = 1
}

func (f *finder) lstatFor(abs string, top bool) (fs.FileInfo, error) {
	if f.follow == 'L' || f.follow == 'H' && top {
		fi, err := f.c.FS.Stat(abs)
		if err == nil {
			return fi, nil
		}
		// A dangling symlink is reported as the link itself.
		if lfi, lerr := f.c.FS.Lstat(abs); lerr == nil {
			return lfi, nil
		}
		return nil, err
	}
	return f.c.FS.Lstat(abs)
}

func (f *finder) walkStart(start string, pred findPred) {
	abs := f.c.Abs(start)
	fi, err := f.lstatFor(abs, true)
	if err != nil {
		f.errf(start, err)
		return
	}
	f.visit(&findEnt{f: f, path: start, abs: abs, start: start, depth: 0, isTop: true, fi: fi}, pred, map[string]bool{})
}

// visit evaluates e (before or after its children, per -depth) and
// descends into directories.
func (f *finder) visit(e *findEnt, pred findPred, ancestors map[string]bool) {
	if f.quit {
		return
	}
	f.visited++
	if f.visited%1024 == 0 && f.ctx != nil && f.ctx.Err() != nil {
		f.quit = true
		return
	}
	inRange := e.depth >= f.minDepth && (f.maxDepth < 0 || e.depth <= f.maxDepth)
	if !f.depthFirst && inRange {
		pred(e)
	}
	if e.fi != nil && e.fi.IsDir() && !e.pruned && (f.maxDepth < 0 || e.depth < f.maxDepth) && !f.quit {
		f.descend(e, pred, ancestors)
	}
	if f.depthFirst && inRange && !f.quit {
		pred(e)
	}
}

func (f *finder) descend(e *findEnt, pred findPred, ancestors map[string]bool) {
	if f.follow == 'L' {
		real, err := f.c.FS.RealPath(e.abs)
		if err == nil {
			if ancestors[real] {
				f.out.Flush()
				fmt.Fprintf(f.c.Stderr, "find: File system loop detected; ‘%s’ is part of the same file system loop as ‘%s’.\n", e.path, e.path)
				f.status = 1
				return
			}
			ancestors[real] = true
			defer delete(ancestors, real)
		}
	}
	ents, err := f.c.FS.ReadDir(e.abs)
	if err != nil {
		f.errf(e.path, err)
		if len(ents) == 0 {
			return
		}
	}
	for _, de := range ents {
		if f.quit {
			return
		}
		name := de.Name()
		child := &findEnt{f: f, start: e.start, depth: e.depth + 1}
		if strings.HasSuffix(e.path, "/") {
			child.path = e.path + name
		} else {
			child.path = e.path + "/" + name
		}
		if e.abs == "/" {
			child.abs = "/" + name
		} else {
			child.abs = strings.TrimRight(e.abs, "/") + "/" + name
		}
		fi, err := f.lstatFor(child.abs, false)
		if err != nil {
			f.errf(child.path, err)
			continue
		}
		child.fi = fi
		f.visit(child, pred, ancestors)
	}
}

func (f *finder) deletePred() findPred {
	return func(e *findEnt) bool {
		if e.path == "." {
			return true
		}
		if err := f.c.FS.Remove(e.abs); err != nil {
			f.out.Flush()
			fmt.Fprintf(f.c.Stderr, "find: cannot delete ‘%s’: %s\n", e.path, shell.ErrText(err))
			f.status = 1
			return false
		}
		return true
	}
}

// findExecArgs substitutes "{}" (anywhere in a word, as GNU does) with p.
func findExecArgs(argv []string, p string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = strings.ReplaceAll(a, "{}", p)
	}
	return out
}

// findExecDirOf returns the directory and "./name" for -execdir.
func findExecDirOf(e *findEnt) (string, string) {
	dir := path.Dir(e.abs)
	return dir, "./" + path.Base(e.abs)
}

func (f *finder) run(argv []string, dir string) int {
	f.out.Flush()
	sub := &shell.Call{Args: argv, Stdin: f.c.Stdin, Stdout: f.c.Stdout, Stderr: f.c.Stderr,
		Dir: dir, Env: f.c.Env, FS: f.c.FS, Exec: f.c.Exec, FDs: f.c.FDs}
	return f.c.Exec(f.ctx, sub)
}

func (f *finder) execOnePred(argv []string, inDir bool) findPred {
	return func(e *findEnt) bool {
		p, dir := e.path, f.c.Dir
		if inDir {
			dir, p = findExecDirOf(e)
		}
		return f.run(findExecArgs(argv, p), dir) == 0
	}
}

// findBatch collects paths for one -exec ... {} +.
type findBatch struct {
	argv  []string
	inDir bool
	dir   string
	paths []string
	size  int
}

// findBatchMax bounds one -exec + command line, like ARG_MAX less the
// environment (GNU uses about 128 KiB here).
const findBatchMax = 128 << 10

func (f *finder) batchPred(argv []string, inDir bool) findPred {
	b := &findBatch{argv: argv, inDir: inDir}
	f.batches = append(f.batches, b)
	return func(e *findEnt) bool {
		p, dir := e.path, f.c.Dir
		if inDir {
			dir, p = findExecDirOf(e)
		}
		if len(b.paths) > 0 && (b.dir != dir || b.size+len(p)+1 > findBatchMax) {
			f.flushBatch(b)
		}
		b.dir = dir
		b.paths = append(b.paths, p)
		b.size += len(p) + 1
		return true
	}
}

func (f *finder) flushBatch(b *findBatch) {
	if len(b.paths) == 0 {
		return
	}
	argv := append([]string{}, b.argv...)
	argv = append(argv, b.paths...)
	if f.run(argv, b.dir) != 0 {
		f.status = 1
	}
	b.paths, b.size = b.paths[:0], 0
}

func (f *finder) flushBatches() {
	for _, b := range f.batches {
		f.flushBatch(b)
	}
}

// statRef stats a reference file of -newer.
func (f *finder) statRef(name string) (fs.FileInfo, error) {
	if f.c.FS == nil {
		return nil, nil // the Check, which has no file view
	}
	abs := f.c.Abs(name)
	var fi fs.FileInfo
	var err error
	if f.follow == 'P' {
		fi, err = f.c.FS.Lstat(abs)
	} else {
		fi, err = f.c.FS.Stat(abs)
	}
	if err != nil {
		return nil, &findUsage{fmt.Sprintf("‘%s’: %s", name, shell.ErrText(err))}
	}
	return fi, nil
}
