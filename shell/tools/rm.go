package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"rung.dev/rung/shell"
)

// rm and rmdir remove files like GNU's. Standard input is never a
// terminal here, so rm never prompts (as GNU does not when piped) but
// with -i, which asks (see fuAsk) about each file that is not a
// directory; -i with a directory operand and -I are refused. Removing "/" (or anything resolving
// to it) is always refused, like GNU's --preserve-root; asking for
// --no-preserve-root is refused as unsupported.

var rmSpec = fuNewSpec([]string{
	"f,force", "r,R,recursive", "d,dir", "v,verbose", "preserve-root=?", "i",
}, "I", "interactive=?", "one-file-system", "no-preserve-root", "help", "version")

var rmdirSpec = fuNewSpec([]string{"p,parents", "v,verbose", "ignore-fail-on-non-empty"}, "help", "version")

type remover struct {
	c                          *shell.Call
	ctx                        context.Context
	force, recursive, dir, vrb bool
	interactive                bool
}

func runRm(ctx context.Context, c *shell.Call) int {
	opts, args, status, ok := rmSpec.parse(c, 1)
	if !ok {
		return status
	}
	r := &remover{c: c, ctx: ctx}
	for _, o := range opts {
		switch o.Key {
		case "force":
			r.force, r.interactive = true, false
		case "i":
			r.interactive, r.force = true, false
		case "recursive":
			r.recursive = true
		case "dir":
			r.dir = true
		case "verbose":
			r.vrb = true
		}
	}
	if len(args) == 0 {
		if r.force {
			return 0
		}
		return usage(c, errors.New("missing operand"), 1)
	}
	if r.interactive {
		for _, a := range args {
			if st, err := fuLstat(c, a); err == nil && st.isDir() {
				// GNU asks to descend and to remove, per directory.
				return c.Fail("rm -i of a directory")
			}
		}
	}
	for _, a := range args {
		if ctx.Err() != nil {
			return 130
		}
		base := fuBase(a)
		if base == "." || base == ".." {
			c.Errorf("refusing to remove '.' or '..' directory: skipping %s", fuQuote(a))
			status = 1
			continue
		}
		if r.recursive {
			if rp, err := c.FS.RealPath(c.Abs(a)); err == nil && rp == "/" {
				if a == "/" {
					c.Errorf("it is dangerous to operate recursively on '/'")
				} else {
					c.Errorf("it is dangerous to operate recursively on %s (same as '/')", fuQuote(a))
				}
				c.Errorf("use --no-preserve-root to override this failsafe")
				status = 1
				continue
			}
		}
		if !r.remove(a) {
			status = 1
		}
	}
	return status
}

// remove removes one operand; it reports false on any failure.
func (r *remover) remove(name string) bool {
	c := r.c
	st, err := fuLstat(c, name)
	if err != nil {
		if r.force && errors.Is(err, fs.ErrNotExist) {
			return true
		}
		c.Errorf("cannot remove %s: %s", fuQuote(name), fuErr(err))
		return false
	}
	if !st.isDir() {
		if r.interactive && !fuAsk(c, "rm: remove "+fuTypeName(st)+" "+fuQuote(name)+"? ") {
			return true
		}
		return r.unlink(name, false)
	}
	if !r.recursive {
		if r.dir {
			if r.slashLink(name) {
				return false
			}
			return r.unlink(name, true)
		}
		c.Errorf("cannot remove %s: %s", fuQuote(name), "Is a directory")
		return false
	}
	ok := true
	if err := r.ctx.Err(); err != nil {
		return false
	}
	f, err := c.FS.OpenFile(c.Abs(name), os.O_RDONLY, 0)
	if err != nil {
		c.Errorf("cannot remove %s: %s", fuQuote(name), fuErr(err))
		return false
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		c.Errorf("cannot remove %s: %s", fuQuote(name), fuErr(err))
		return false
	}
	for _, e := range ents {
		if !r.remove(fuJoin(name, e.Name())) {
			ok = false
		}
	}
	if !ok {
		return false
	}
	if r.slashLink(name) {
		return false
	}
	return r.unlink(name, true)
}

func (r *remover) unlink(name string, dir bool) bool {
	if err := r.c.FS.Remove(r.c.Abs(name)); err != nil {
		if r.force && errors.Is(err, fs.ErrNotExist) {
			return true
		}
		r.c.Errorf("cannot remove %s: %s", fuQuote(name), fuErr(err))
		return false
	}
	if r.vrb {
		if dir {
			fmt.Fprintf(r.c.Stdout, "removed directory %s\n", fuQuote(name))
		} else {
			fmt.Fprintf(r.c.Stdout, "removed %s\n", fuQuote(name))
		}
	}
	return true
}

func runRmdir(ctx context.Context, c *shell.Call) int {
	opts, args, status, ok := rmdirSpec.parse(c, 1)
	if !ok {
		return status
	}
	var parents, verbose, ignore bool
	for _, o := range opts {
		switch o.Key {
		case "parents":
			parents = true
		case "verbose":
			verbose = true
		case "ignore-fail-on-non-empty":
			ignore = true
		}
	}
	if len(args) == 0 {
		return usage(c, errors.New("missing operand"), 1)
	}
	rm := func(name string) error {
		if verbose {
			fuVerbose(c, "removing directory, %s", fuQuote(name))
		}
		st, err := fuLstat(c, name)
		if err == nil && !st.isDir() {
			return &fs.PathError{Op: "rmdir", Path: name, Err: syscall.ENOTDIR}
		}
		if err != nil {
			return err
		}
		b := fuBase(name)
		if b == "." || b == ".." {
			return &fs.PathError{Op: "rmdir", Path: name, Err: syscall.EINVAL}
		}
		return c.FS.Remove(c.Abs(strings.TrimRight(name, "/")))
	}
	nonEmpty := func(err error) bool {
		e := fuErrno(err)
		return e == syscall.ENOTEMPTY || e == syscall.EEXIST
	}
	for _, a := range args {
		if ctx.Err() != nil {
			return 130
		}
		if err := rm(a); err != nil {
			if !(ignore && nonEmpty(err)) {
				c.Errorf("failed to remove %s: %s", fuQuote(a), fuErr(err))
				status = 1
			}
			continue
		}
		if !parents {
			continue
		}
		p := strings.TrimRight(a, "/")
		for {
			i := strings.LastIndexByte(p, '/')
			if i <= 0 {
				break
			}
			p = strings.TrimRight(p[:i], "/")
			if p == "" {
				break
			}
			if err := rm(p); err != nil {
				if !(ignore && nonEmpty(err)) {
					c.Errorf("failed to remove directory %s: %s", fuQuote(p), fuErr(err))
					status = 1
				}
				break
			}
		}
	}
	return status
}

// slashLink reports (and says) that name, a directory found through a
// trailing slash, is a symlink: GNU rm empties the directory it names
// but rmdir(2) of "link/" fails with ENOTDIR.
func (r *remover) slashLink(name string) bool {
	trimmed := strings.TrimRight(name, "/")
	if trimmed == name || trimmed == "" {
		return false
	}
	if st, err := fuLstat(r.c, trimmed); err != nil || !st.isLink() {
		return false
	}
	r.c.Errorf("cannot remove %s: Not a directory", fuQuote(name))
	return true
}
