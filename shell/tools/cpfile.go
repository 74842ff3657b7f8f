package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"rung.dev/rung/shell"
)

// copier copies files and trees for cp (and for mv across file systems).
// The file view has no mknod, so FIFOs, sockets and devices cannot be
// recreated: cp refuses (as unsupported) before copying anything when a
// source is or contains one.
type copier struct {
	c   *shell.Call
	ctx context.Context

	recursive, derefAll, derefTop                bool
	preserveMode, preserveTime, preserveLinks    bool
	force, noClobber, update, verbose, removeDst bool
	// interactive: -i, ask before overwriting.
	interactive       bool
	hardlink, symlink bool
	noPreserveMode    bool                 // --no-preserve=mode: default modes
	created           map[[2]uint64]bool   // dirs this copy made
	intoSelf          bool                 // met its own copy: stop
	links             map[[2]uint64]string // dev/ino -> first copy, for --preserve=links
	buf               []byte
}

// special reports the first FIFO, socket or device that copying src would
// have to recreate, or "".
func (cp *copier) special(src string, top bool) string {
	var st fuStat
	var err error
	if cp.derefAll || (top && cp.derefTop) {
		st, err = fuStatPath(cp.c, src)
	} else {
		st, err = fuLstat(cp.c, src)
	}
	if err != nil {
		return ""
	}
	if st.isDir() && cp.recursive {
		ents, err := cp.c.FS.ReadDir(cp.c.Abs(src))
		if err != nil {
			return ""
		}
		for _, e := range ents {
			t := e.Type()
			switch {
			case t.IsDir():
				if s := cp.special(fuJoin(src, e.Name()), false); s != "" {
					return s
				}
			case t&fs.ModeSymlink != 0:
				if cp.derefAll {
					if s := cp.special(fuJoin(src, e.Name()), false); s != "" {
						return s
					}
				}
			case t&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0:
				return fuJoin(src, e.Name())
			}
		}
		return ""
	}
	if !st.isDir() && !st.isReg() && !st.isLink() {
		if cp.hardlink || cp.symlink {
			return ""
		}
		return src
	}
	return ""
}

// copy copies src to dst; it reports false on failure (already printed).
func (cp *copier) copy(src, dst string, top bool) bool {
	return cp.copyStat(src, dst, top, nil)
}

// copyStat is copy with src's lstat result when the caller has it.
func (cp *copier) copyStat(src, dst string, top bool, pre *fuStat) bool {
	c := cp.c
	if cp.ctx.Err() != nil || cp.intoSelf {
		return false
	}
	var st fuStat
	var err error
	if pre != nil && !cp.derefAll {
		st = *pre
	} else if cp.derefAll || (top && cp.derefTop) {
		st, err = fuStatPath(c, src)
	} else {
		st, err = fuLstat(c, src)
	}
	if err != nil {
		c.Errorf("cannot stat %s: %s", fuQuote(src), fuErr(err))
		return false
	}
	dstSt, derr := fuLstat(c, dst)
	dstExists := derr == nil
	if dstExists && dstSt.isLink() && !st.isLink() {
		// Writing through a symlink to an existing file is what GNU does.
		if t, err := fuStatPath(c, dst); err == nil {
			dstSt = t
		}
	}
	if dstExists && dstSt.Dev == st.Dev && dstSt.Ino == st.Ino && !cp.symlink {
		c.Errorf("%s and %s are the same file", fuQuote(src), fuQuote(dst))
		return false
	}
	switch {
	case st.isDir() && cp.created[[2]uint64{st.Dev, st.Ino}]:
		// A directory this very copy created inside its source (cp -r d
		// d/sub): GNU stops copying there (every enclosing directory
		// stops too) rather than recursing forever.
		cp.intoSelf = true
		return false
	case st.isDir():
		return cp.copyDir(src, dst, st, dstSt, dstExists)
	case st.isLink() && !cp.hardlink && !cp.symlink:
		if cp.skip(dst, st, dstSt, dstExists) {
			return true
		}
		target, err := c.FS.Readlink(c.Abs(src))
		if err != nil {
			c.Errorf("cannot read symbolic link %s: %s", fuQuote(src), fuErr(err))
			return false
		}
		if dstExists {
			if dstSt.isDir() {
				c.Errorf("cannot overwrite directory %s with non-directory", fuQuote(dst))
				return false
			}
			c.FS.Remove(c.Abs(dst))
		}
		if err := c.FS.Symlink(target, c.Abs(dst)); err != nil {
			c.Errorf("cannot create symbolic link %s: %s", fuQuote(dst), fuErr(err))
			return false
		}
		cp.say(src, dst)
		return true
	}
	if dstExists && dstSt.isDir() {
		c.Errorf("cannot overwrite directory %s with non-directory", fuQuote(dst))
		return false
	}
	if cp.skip(dst, st, dstSt, dstExists) {
		return true
	}
	if cp.hardlink || cp.symlink || (cp.preserveLinks && st.Nlink > 1) {
		if ok, done := cp.link(src, dst, st, dstExists); done {
			return ok
		}
	}
	return cp.copyFile(src, dst, st, dstExists)
}

// skip applies -n, -u and -i.
func (cp *copier) skip(dst string, st, dstSt fuStat, dstExists bool) bool {
	if !dstExists {
		return false
	}
	if cp.noClobber {
		return true
	}
	if cp.update && !st.Mtim.After(dstSt.Mtim) {
		return true
	}
	return cp.interactive && !fuAsk(cp.c, "cp: overwrite "+fuQuote(dst)+"? ")
}

func (cp *copier) say(src, dst string) {
	if cp.verbose {
		fmt.Fprintf(cp.c.Stdout, "%s -> %s\n", fuQuote(src), fuQuote(dst))
	}
}

// link makes dst a hard or symbolic link for -l, -s and preserved hard
// links; done is false when the caller should copy instead.
func (cp *copier) link(src, dst string, st fuStat, dstExists bool) (ok, done bool) {
	c := cp.c
	key := [2]uint64{st.Dev, st.Ino}
	var err error
	switch {
	case cp.symlink:
		if !strings.HasPrefix(src, "/") && strings.Contains(dst, "/") {
			c.Errorf("%s: can make relative symbolic links only in current directory", fuQuote(dst))
			return false, true
		}
		if dstExists && (cp.force || cp.removeDst) {
			c.FS.Remove(c.Abs(dst))
		}
		err = c.FS.Symlink(src, c.Abs(dst))
		if err != nil {
			c.Errorf("cannot create symbolic link %s to %s: %s", fuQuote(dst), fuQuote(src), fuErr(err))
			return false, true
		}
	case cp.hardlink:
		if dstExists && (cp.force || cp.removeDst) {
			c.FS.Remove(c.Abs(dst))
		}
		if err = c.FS.Link(c.Abs(src), c.Abs(dst)); err != nil {
			c.Errorf("cannot create hard link %s to %s: %s", fuQuote(dst), fuQuote(src), fuErr(err))
			return false, true
		}
	default:
		first, seen := cp.links[key]
		if !seen {
			if cp.links == nil {
				cp.links = map[[2]uint64]string{}
			}
			cp.links[key] = dst
			return false, false
		}
		if dstExists {
			c.FS.Remove(c.Abs(dst))
		}
		if err = c.FS.Link(c.Abs(first), c.Abs(dst)); err != nil {
			return false, false
		}
	}
	cp.say(src, dst)
	return true, true
}

func (cp *copier) copyFile(src, dst string, st fuStat, dstExists bool) bool {
	c := cp.c
	in, err := c.FS.OpenFile(c.Abs(src), os.O_RDONLY, 0)
	if err != nil {
		c.Errorf("cannot open %s for reading: %s", fuQuote(src), fuErr(err))
		return false
	}
	defer in.Close()
	if dstExists && cp.removeDst {
		c.FS.Remove(c.Abs(dst))
		dstExists = false
	}
	perm := st.Mode & 0o777 &^ fuUmask
	if cp.noPreserveMode {
		perm = 0o666 &^ fuUmask
	}
	out, err := c.FS.OpenFile(c.Abs(dst), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fuFileMode(perm))
	if err != nil && dstExists && cp.force {
		c.FS.Remove(c.Abs(dst))
		dstExists = false
		out, err = c.FS.OpenFile(c.Abs(dst), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fuFileMode(perm))
	}
	if err != nil {
		c.Errorf("cannot create regular file %s: %s", fuQuote(dst), fuErr(err))
		return false
	}
	if cp.buf == nil {
		cp.buf = make([]byte, 128<<10)
	}
	_, err = io.CopyBuffer(fuWriterOnly{out}, &ctxReader{ctx: cp.ctx, r: in}, cp.buf)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		c.Errorf("error writing %s: %s", fuQuote(dst), fuErr(err))
		return false
	}
	if !dstExists || cp.preserveMode {
		mode := perm
		if cp.preserveMode {
			mode = st.Mode & 0o7777
		}
		c.FS.Chmod(c.Abs(dst), fuFileMode(mode))
	}
	if cp.preserveTime {
		c.FS.Chtimes(c.Abs(dst), st.Atim, st.Mtim)
	}
	cp.say(src, dst)
	return true
}

type fuWriterOnly struct{ io.Writer }

func (cp *copier) copyDir(src, dst string, st, dstSt fuStat, dstExists bool) bool {
	c := cp.c
	if !cp.recursive {
		c.Errorf("-r not specified; omitting directory %s", fuQuote(src))
		return false
	}
	if dstExists && !dstSt.isDir() {
		c.Errorf("cannot overwrite non-directory %s with directory %s", fuQuote(dst), fuQuote(src))
		return false
	}
	ok := true
	if inside(c, src, dst) {
		// GNU reports this, yet copies everything but its own copy.
		c.Errorf("cannot copy a directory, %s, into itself, %s", fuQuote(src), fuQuote(dst))
		ok = false
	}
	if !dstExists {
		if err := c.FS.Mkdir(c.Abs(dst), 0o700); err != nil {
			c.Errorf("cannot create directory %s: %s", fuQuote(dst), fuErr(err))
			return false
		}
		if nst, err := fuLstat(c, dst); err == nil {
			if cp.created == nil {
				cp.created = map[[2]uint64]bool{}
			}
			cp.created[[2]uint64{nst.Dev, nst.Ino}] = true
		}
		cp.say(src, dst)
	}
	ents, err := cp.readDir(src)
	if err != nil {
		c.Errorf("cannot access %s: %s", fuQuote(src), fuErr(err))
		return false
	}
	for i := range ents {
		e := &ents[i]
		var pre *fuStat
		if e.ok {
			pre = &e.st
		}
		if !cp.copyStat(fuJoin(src, e.name), fuJoin(dst, e.name), false, pre) {
			ok = false
			if cp.ctx.Err() != nil {
				return false
			}
			if cp.intoSelf {
				break
			}
		}
	}
	if !dstExists || cp.preserveMode {
		mode := st.Mode & 0o777 &^ fuUmask
		if cp.noPreserveMode {
			mode = 0o777 &^ fuUmask
		}
		if cp.preserveMode {
			mode = st.Mode & 0o7777
		}
		c.FS.Chmod(c.Abs(dst), fuFileMode(mode))
	}
	if cp.preserveTime {
		c.FS.Chtimes(c.Abs(dst), st.Atim, st.Mtim)
	}
	return ok
}

// inside reports whether dst is src or lies under it (after resolving
// symlinks), which would make a recursive copy or move never end.
func inside(c *shell.Call, src, dst string) bool {
	rs, err := c.FS.RealPath(c.Abs(src))
	if err != nil {
		return false
	}
	rd, err := c.FS.RealPath(c.Abs(dst))
	if err != nil {
		return false
	}
	return rd == rs || strings.HasPrefix(rd, strings.TrimSuffix(rs, "/")+"/")
}

// fuTargets pairs sources with destinations as cp, mv and ln do: with -t
// DIR, with -T (exactly two operands), or "SOURCE... DIRECTORY".
func fuTargets(c *shell.Call, ops []string, targetDir string, noTarget bool) ([][2]string, bool) {
	if targetDir != "" {
		st, err := fuStatPath(c, targetDir)
		if err != nil {
			c.Errorf("target directory %s: %s", fuQuote(targetDir), fuErr(err))
			return nil, false
		}
		if !st.isDir() {
			c.Errorf("target directory %s is not a directory", fuQuote(targetDir))
			return nil, false
		}
		if len(ops) == 0 {
			usage(c, errors.New("missing file operand"), 1)
			return nil, false
		}
		var pairs [][2]string
		for _, s := range ops {
			pairs = append(pairs, [2]string{s, fuJoin(targetDir, fuBase(s))})
		}
		return pairs, true
	}
	switch len(ops) {
	case 0:
		usage(c, errors.New("missing file operand"), 1)
		return nil, false
	case 1:
		usage(c, fmt.Errorf("missing destination file operand after %s", fuQuote(ops[0])), 1)
		return nil, false
	}
	last := ops[len(ops)-1]
	if noTarget {
		if len(ops) > 2 {
			usage(c, fmt.Errorf("extra operand %s", fuQuote(ops[2])), 1)
			return nil, false
		}
		return [][2]string{{ops[0], ops[1]}}, true
	}
	st, err := fuStatPath(c, last)
	isDir := err == nil && st.isDir()
	if len(ops) == 2 && !isDir {
		return [][2]string{{ops[0], ops[1]}}, true
	}
	if !isDir {
		if err != nil && len(ops) > 2 && !errors.Is(err, fs.ErrNotExist) {
			c.Errorf("target %s: %s", fuQuote(last), fuErr(err))
		} else {
			c.Errorf("target %s is not a directory", fuQuote(last))
		}
		return nil, false
	}
	var pairs [][2]string
	for _, s := range ops[:len(ops)-1] {
		pairs = append(pairs, [2]string{s, fuJoin(last, fuBase(s))})
	}
	return pairs, true
}

type cpEnt struct {
	name string
	st   fuStat
	ok   bool
}

// readDir lists dir in inode order, as GNU cp does (gnulib's savedir
// with SAVEDIR_SORT_FASTREAD), so -v output and the handling of a copy
// into itself follow GNU's order.
func (cp *copier) readDir(dir string) ([]cpEnt, error) {
	des, err := fuReadDir(cp.c, dir, true)
	if err != nil {
		return nil, err
	}
	ents := make([]cpEnt, len(des))
	for i, de := range des {
		ents[i] = cpEnt{name: de.name, st: de.st, ok: de.ok}
	}
	slices.SortFunc(ents, func(a, b cpEnt) int {
		switch {
		case a.st.Ino < b.st.Ino:
			return -1
		case a.st.Ino > b.st.Ino:
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	return ents, nil
}
