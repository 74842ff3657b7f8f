package tools

import (
	"context"
	"os"
	"path"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"

	"rung.dev/rung/shell"
)

// This file implements "git mv src dst" (files, or a directory into a
// new name) and "git restore [--staged] [--source=rev] paths".

var (
	gitMvOpts      = NewOptions("f,force", "q,quiet")
	gitRestoreOpts = NewOptions("S,staged", "W,worktree", "s,source=", "q,quiet")
)

// gitMv is "git mv src dst".
func gitMv(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	if len(opts) > 0 {
		return g.c.Fail("git mv " + opts[0].Name)
	}
	if len(args) != 2 {
		return g.c.Fail("git mv with other than two paths")
	}
	src, ok1 := g.pathspec(args[0])
	dst, ok2 := g.pathspec(args[1])
	if !ok1 || !ok2 || src == "" || dst == "" {
		return g.c.Fail("git mv outside the repository")
	}
	if fi, err := g.c.FS.Stat(g.top + "/" + dst); err == nil {
		if !fi.IsDir() {
			return g.fatal("destination exists, source=%s, destination=%s", src, dst)
		}
		dst = path.Join(dst, path.Base(src))
	}
	s, err := g.scanHead(ctx, "no")
	if err != nil {
		return g.fatal("%v", err)
	}
	var moved []*index.Entry
	for _, e := range s.idx.Entries {
		if gitUnder(e.Name, src) {
			moved = append(moved, e)
		}
	}
	if len(moved) == 0 {
		if _, err := g.c.FS.Lstat(g.top + "/" + src); err != nil {
			return g.fatal("bad source, source=%s, destination=%s", src, dst)
		}
		return g.fatal("not under version control, source=%s, destination=%s", src, dst)
	}
	if err := g.mkdirs(path.Dir(g.top + "/" + dst)); err != nil {
		return g.fatal("%v", err)
	}
	if err := g.c.FS.Rename(g.top+"/"+src, g.top+"/"+dst); err != nil {
		return g.fatal("renaming '%s' failed: %s", src, shell.ErrText(err))
	}
	for _, e := range moved {
		e.Name = dst + e.Name[len(src):]
	}
	if err := g.saveIndex(s.idx); err != nil {
		return g.fatal("%v", err)
	}
	return 0
}

// gitRestore is "git restore [--staged] [--worktree] [--source=rev] paths".
func gitRestore(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	staged, worktree, source := false, false, ""
	for _, o := range opts {
		switch o.Key {
		case "staged":
			staged = true
		case "worktree":
			worktree = true
		case "source":
			source = o.Value
		}
	}
	if !staged {
		worktree = true
	}
	if len(args) == 0 {
		return g.fatal("you must specify path(s) to restore")
	}
	s, err := g.scanHead(ctx, "no")
	if err != nil {
		return g.fatal("%v", err)
	}
	var from map[string]gitTreeEntry
	switch {
	case source != "":
		h, ok := g.resolveRev(source)
		if !ok {
			return g.fatal("could not resolve %s", source)
		}
		if from, err = g.flatTree(h); err != nil {
			return g.fatal("%v", err)
		}
	case staged:
		from = s.head
	default:
		from = gitIndexFiles(s.idx)
	}
	for _, a := range args {
		sp, ok := g.pathspec(a)
		if !ok {
			return g.fatal("%s: '%s' is outside repository at '%s'", a, a, g.top)
		}
		n := 0
		for p := range from {
			if gitUnder(p, sp) {
				n++
			}
		}
		for _, e := range s.idx.Entries {
			if gitUnder(e.Name, sp) {
				n++
			}
		}
		if n == 0 {
			return g.errorf(1, "pathspec '%s' did not match any file(s) known to git", a)
		}
		if staged {
			for _, e := range append([]*index.Entry(nil), s.idx.Entries...) {
				if gitUnder(e.Name, sp) {
					if _, ok := from[e.Name]; !ok {
						gitRemoveEntry(s.idx, e.Name)
					}
				}
			}
			for p, te := range from {
				if gitUnder(p, sp) {
					gitSetEntry(s.idx, &index.Entry{Name: p, Hash: te.hash, Mode: filemode.FileMode(te.mode)})
				}
			}
		}
		if worktree {
			for p, te := range from {
				if !gitUnder(p, sp) {
					continue
				}
				data, err := g.blob(te.hash)
				if err != nil {
					return g.fatal("%v", err)
				}
				full := g.top + "/" + p
				if err := g.mkdirs(path.Dir(full)); err != nil {
					return g.fatal("%v", err)
				}
				if err := g.writeFile(full, data); err != nil {
					return g.fatal("%v", err)
				}
				perm := os.FileMode(0o644)
				if te.mode == uint32(filemode.Executable) {
					perm = 0o755
				}
				g.c.FS.Chmod(full, perm)
			}
		}
	}
	if staged {
		if err := g.saveIndex(s.idx); err != nil {
			return g.fatal("%v", err)
		}
	}
	return 0
}
