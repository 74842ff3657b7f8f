package tools

import (
	"context"
	"fmt"
	"strings"
	"syscall"

	"rung.dev/rung/shell"
)

// mv moves files like GNU mv: rename(2) within the sandbox (where
// /workspace and /tmp share a file system), falling back to copy and
// remove on EXDEV. Standard input is never a terminal, so mv never
// prompts; -i and backups are refused.

var mvSpec = fuNewSpec([]string{
	"f,force", "n,no-clobber", "v,verbose", "u,update=*", "T,no-target-directory", "i,interactive",
	"t,target-directory=", "strip-trailing-slashes",
}, "b", "backup=?", "S,suffix=", "Z,context", "debug", "help", "version")

func runMv(ctx context.Context, c *shell.Call) int {
	opts, ops, status, ok := mvSpec.parse(c, 1)
	if !ok {
		return status
	}
	var noClobber, verbose, update, noTarget, interactive bool
	targetDir := ""
	for _, o := range opts {
		switch o.Key {
		case "force":
			noClobber, interactive = false, false
		case "no-clobber":
			noClobber, interactive = true, false
		case "interactive":
			interactive, noClobber = true, false
		case "verbose":
			verbose = true
		case "update":
			switch o.Value {
			case "", "older":
				update = true
			case "all":
			case "none":
				noClobber = true
			default:
				return c.Fail("option --update=" + o.Value)
			}
		case "no-target-directory":
			noTarget = true
		case "target-directory":
			targetDir = o.Value
		case "strip-trailing-slashes":
			for i, s := range ops {
				if t := strings.TrimRight(s, "/"); t != "" {
					ops[i] = t
				}
			}
		}
	}
	pairs, ok := fuTargets(c, ops, targetDir, noTarget)
	if !ok {
		return 1
	}
	for _, p := range pairs {
		if ctx.Err() != nil {
			return 130
		}
		if !mvOne(ctx, c, p[0], p[1], mvOpts{noClobber, update, verbose, interactive}) {
			status = 1
		}
	}
	return status
}

type mvOpts struct{ noClobber, update, verbose, interactive bool }

func mvOne(ctx context.Context, c *shell.Call, src, dst string, o mvOpts) bool {
	st, err := fuLstat(c, src)
	if err != nil {
		c.Errorf("cannot stat %s: %s", fuQuote(src), fuErr(err))
		return false
	}
	dstSt, derr := fuLstat(c, dst)
	exists := derr == nil
	if exists {
		if dstSt.Dev == st.Dev && dstSt.Ino == st.Ino {
			c.Errorf("%s and %s are the same file", fuQuote(src), fuQuote(dst))
			return false
		}
		if o.noClobber || (o.update && !st.Mtim.After(dstSt.Mtim)) {
			return true
		}
		if o.interactive && !fuAsk(c, "mv: overwrite "+fuQuote(dst)+"? ") {
			return true
		}
		if st.isDir() && !dstSt.isDir() {
			c.Errorf("cannot overwrite non-directory %s with directory %s", fuQuote(dst), fuQuote(src))
			return false
		}
		if !st.isDir() && dstSt.isDir() {
			c.Errorf("cannot overwrite directory %s with non-directory", fuQuote(dst))
			return false
		}
	}
	if !exists && !st.isDir() && strings.HasSuffix(dst, "/") {
		// rename(2) refuses a trailing slash on a new name for a file.
		c.Errorf("cannot move %s to %s: Not a directory", fuQuote(src), fuQuote(dst))
		return false
	}
	if st.isDir() && inside(c, src, fuParentOf(dst)) {
		c.Errorf("cannot move %s to a subdirectory of itself, %s", fuQuote(src), fuQuote(dst))
		return false
	}
	err = c.FS.Rename(c.Abs(src), c.Abs(dst))
	if fuErrno(err) == syscall.EXDEV {
		err = mvCopy(ctx, c, src, dst)
		if err == errMvReported {
			return false
		}
	}
	if err != nil {
		c.Errorf("cannot move %s to %s: %s", fuQuote(src), fuQuote(dst), fuErr(err))
		return false
	}
	if o.verbose {
		fmt.Fprintf(c.Stdout, "renamed %s -> %s\n", fuQuote(src), fuQuote(dst))
	}
	return true
}

var errMvReported = fmt.Errorf("already reported")

// mvCopy moves across file systems: copy everything (as cp -a), then
// remove the source.
func mvCopy(ctx context.Context, c *shell.Call, src, dst string) error {
	cp := &copier{c: c, ctx: ctx, recursive: true, preserveMode: true, preserveTime: true, preserveLinks: true}
	if s := cp.special(src, true); s != "" {
		c.Errorf("cannot move %s: a FIFO, socket or device cannot be recreated here", fuQuote(s))
		return errMvReported
	}
	if !cp.copy(src, dst, true) {
		return errMvReported
	}
	r := &remover{c: c, ctx: ctx, force: true, recursive: true}
	if !r.remove(src) {
		return errMvReported
	}
	return nil
}

// fuParentOf returns the directory part of p ("." when none).
func fuParentOf(p string) string {
	t := strings.TrimRight(p, "/")
	i := strings.LastIndexByte(t, '/')
	switch {
	case i < 0:
		return "."
	case i == 0:
		return "/"
	}
	return t[:i]
}
