package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// This file implements "git diff --no-index A B" for two files (either
// may be /dev/null), a file and a directory (the file of its name there)
// or two directories, inside a repository or not. Symlinks, a directory
// on one side only, and directories with both added and deleted files
// (git may pair them as renames by similarity) are refused.

// gitDiffNoIndex compares the files a and b as git diff --no-index does:
// names as given (without a leading /), exit status 1 when they differ.
func gitDiffNoIndex(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	var paths []string
	for _, a := range args {
		if a != "--" {
			paths = append(paths, a)
		}
	}
	if len(paths) != 2 {
		fmt.Fprintln(g.c.Stderr, "usage: git diff --no-index [<options>] <path> <path>")
		return 129
	}
	f, code := g.diffFlags(opts)
	if code != 0 {
		return code
	}
	if f.cached {
		return g.c.Fail("git diff --no-index --cached")
	}
	stat, nameOnly, nameStat, numstat, quiet, ctxLines := f.stat, f.nameOnly, f.nameStat, f.numstat, f.quiet, f.ctxLines
	// A file against a directory compares it with the file of its name
	// there.
	isDir := func(p string) bool {
		if p == "/dev/null" {
			return false
		}
		fi, err := g.c.FS.Stat(g.noIndexPath(p))
		return err == nil && fi.IsDir()
	}
	d0, d1 := isDir(paths[0]), isDir(paths[1])
	switch {
	case d0 && d1:
	case d0 && paths[1] != "/dev/null":
		paths[0] = strings.TrimSuffix(paths[0], "/") + "/" + path.Base(paths[1])
	case d1 && paths[0] != "/dev/null":
		paths[1] = strings.TrimSuffix(paths[1], "/") + "/" + path.Base(paths[0])
	case d0 || d1:
		return g.c.Fail("git diff --no-index of a directory and /dev/null")
	}
	var chs []gitFileChange
	if d0 && d1 {
		var err error
		if chs, err = g.noIndexDirs(ctx, paths[0], paths[1]); err != nil {
			if errors.Is(err, errGitRefuse) {
				return g.c.Fail("git diff --no-index: " + gitRefusal(err))
			}
			return g.fatal("%v", err)
		}
		adds, dels := 0, 0
		for _, fc := range chs {
			switch fc.status {
			case 'A':
				adds++
			case 'D':
				dels++
			}
		}
		if adds > 0 && dels > 0 {
			// Git may pair them as renames by similarity.
			return g.c.Fail("git diff --no-index of directories with both added and deleted files")
		}
	} else {
		fc, code := g.noIndexFiles(paths[0], paths[1])
		if code >= 0 {
			return code
		}
		chs = append(chs, fc)
	}
	if len(chs) == 0 {
		return 0
	}
	if quiet {
		return 1
	}
	w := bufio.NewWriter(g.c.Stdout)
	defer w.Flush()
	// The names --stat and --numstat show: "A => B" when they differ,
	// /dev/null for the missing side.
	shown := func(fc *gitFileChange) string {
		switch {
		case fc.status == 'A':
			return "/dev/null => " + gitQuotePath(fc.newPath)
		case fc.status == 'D':
			return gitQuotePath(fc.oldPath) + " => /dev/null"
		case fc.oldPath != fc.newPath:
			return gitRenameName(fc.oldPath, fc.newPath)
		}
		return gitQuotePath(fc.newPath)
	}
	if numstat {
		for i := range chs {
			a, d := g.numstat(ctx, &chs[i])
			if a < 0 {
				fmt.Fprintf(w, "-\t-\t%s\n", shown(&chs[i]))
			} else {
				fmt.Fprintf(w, "%d\t%d\t%s\n", a, d, shown(&chs[i]))
			}
		}
	}
	switch {
	case nameOnly:
		for _, fc := range chs {
			fmt.Fprintln(w, gitQuotePath(fc.newPath))
		}
	case nameStat:
		for _, fc := range chs {
			fmt.Fprintf(w, "%c\t%s\n", fc.status, gitQuotePath(fc.oldPath))
		}
	case stat:
		rows := g.statRows(ctx, chs)
		for i := range rows {
			rows[i].name = shown(&chs[i])
		}
		gitWriteStat(w, rows)
	}
	if !stat && !nameOnly && !nameStat && !numstat {
		for i := range chs {
			g.writePatch(ctx, w, &chs[i], ctxLines)
		}
	}
	return 1
}

// noIndexPath is p (as given) in the sandbox.
func (g *gitCtx) noIndexPath(p string) string {
	if g.dir != "" {
		return gitAbsFrom(g.dir, p)
	}
	return gitAbsFrom(g.c.Dir, p)
}

// noIndexFile reads a regular file; missing is true when there is none.
func (g *gitCtx) noIndexFile(p string) (data []byte, mode uint32, missing bool, err error) {
	full := g.noIndexPath(p)
	fi, err := g.c.FS.Lstat(full)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, true, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, false, fmt.Errorf("%w: a symlink or special file", errGitRefuse)
	}
	mode = 0o100644
	if fi.Mode()&0o100 != 0 {
		mode = 0o100755
	}
	f, err := g.c.FS.OpenFile(full, 0, 0)
	if err != nil {
		return nil, 0, false, err
	}
	defer f.Close()
	data, err = io.ReadAll(f)
	return data, mode, false, err
}

// noIndexFiles compares two files (either may be /dev/null); code is
// -1 when fc is a change, else git's status.
func (g *gitCtx) noIndexFiles(a, b string) (fc gitFileChange, code int) {
	var data [2][]byte
	var mode [2]uint32
	var null [2]bool
	for i, p := range []string{a, b} {
		if p == "/dev/null" {
			null[i] = true
			continue
		}
		var missing bool
		var err error
		data[i], mode[i], missing, err = g.noIndexFile(p)
		switch {
		case errors.Is(err, errGitRefuse):
			return fc, g.c.Fail("git diff --no-index of " + gitRefusal(err))
		case err != nil:
			return fc, g.fatal("%v", err)
		case missing:
			return fc, g.errorf(1, "Could not access '%s'", p)
		}
	}
	if null[0] && null[1] {
		return fc, 0
	}
	name := func(p string) string { return strings.TrimLeft(p, "/") }
	fc = gitFileChange{oldPath: name(a), newPath: name(b), oldMode: mode[0], newMode: mode[1],
		oldData: data[0], newData: data[1], status: 'M', loaded: true}
	switch {
	case null[0]:
		fc.status, fc.oldPath = 'A', fc.newPath
	case null[1]:
		fc.status, fc.newPath = 'D', fc.oldPath
	}
	if !null[0] {
		fc.oldHash = plumbing.ComputeHash(plumbing.BlobObject, data[0])
	}
	if !null[1] {
		fc.newHash = plumbing.ComputeHash(plumbing.BlobObject, data[1])
	}
	if fc.status == 'M' && fc.oldHash == fc.newHash && fc.oldMode == fc.newMode {
		return fc, 0
	}
	return fc, -1
}

// noIndexDirs lists the changes between directories a and b as git's
// no-index walk does: each level's names in byte order, a directory on
// both sides entered at its name.
func (g *gitCtx) noIndexDirs(ctx context.Context, a, b string) ([]gitFileChange, error) {
	join := func(d, n string) string { return strings.TrimSuffix(d, "/") + "/" + n }
	list := func(d string) (map[string]fs.FileInfo, error) {
		ents, err := g.c.FS.ReadDir(g.noIndexPath(d))
		if err != nil {
			return nil, err
		}
		out := map[string]fs.FileInfo{}
		for _, e := range ents {
			fi, err := e.Info()
			if err != nil {
				return nil, err
			}
			out[e.Name()] = fi
		}
		return out, nil
	}
	ea, err := list(a)
	if err != nil {
		return nil, err
	}
	eb, err := list(b)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ea)+len(eb))
	for n := range ea {
		names = append(names, n)
	}
	for n := range eb {
		if _, ok := ea[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out []gitFileChange
	for _, n := range names {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		fa, fb := ea[n], eb[n]
		if fa != nil && fa.IsDir() || fb != nil && fb.IsDir() {
			if fa == nil || fb == nil || !fa.IsDir() || !fb.IsDir() {
				return nil, fmt.Errorf("%w: a directory on one side only", errGitRefuse)
			}
			sub, err := g.noIndexDirs(ctx, join(a, n), join(b, n))
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
			continue
		}
		pa, pb := join(a, n), join(b, n)
		switch {
		case fa == nil:
			pa = "/dev/null"
		case fb == nil:
			pb = "/dev/null"
		}
		fc, code := g.noIndexFiles(pa, pb)
		if g.c.Unsupported != nil {
			return nil, fmt.Errorf("%w: a symlink or special file", errGitRefuse)
		}
		if code == -1 {
			out = append(out, fc)
		}
	}
	return out, nil
}
