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

	"github.com/go-git/go-git/v5/plumbing"
)

// This file implements "git diff --no-index A B" for two files (either
// may be /dev/null), inside a repository or not. Directories (git pairs
// their files, with rename detection) and symlinks are refused.

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
	stat, nameOnly, nameStat, numstat, quiet, ctxLines := false, false, false, false, false, 3
	for _, o := range opts {
		switch o.Key {
		case "stat":
			stat = true
		case "name-only":
			nameOnly = true
		case "name-status":
			nameStat = true
		case "numstat":
			numstat = true
		case "quiet":
			quiet = true
		case "unified":
			n, err := strconv.Atoi(o.Value)
			if err != nil || n < 0 {
				return g.c.Fail("git diff -U" + o.Value)
			}
			ctxLines = n
		case "cached", "staged":
			return g.c.Fail("git diff --no-index --cached")
		}
	}
	var data [2][]byte
	var mode [2]uint32
	var null [2]bool
	for i, p := range paths {
		if p == "/dev/null" {
			null[i] = true
			continue
		}
		full := gitAbsFrom(g.c.Dir, p)
		if g.dir != "" {
			full = gitAbsFrom(g.dir, p)
		}
		fi, err := g.c.FS.Lstat(full)
		if errors.Is(err, fs.ErrNotExist) {
			return g.errorf(1, "Could not access '%s'", p)
		}
		if err != nil {
			return g.fatal("%v", err)
		}
		if !fi.Mode().IsRegular() {
			return g.c.Fail("git diff --no-index of a directory or special file")
		}
		mode[i] = 0o100644
		if fi.Mode()&0o100 != 0 {
			mode[i] = 0o100755
		}
		f, err := g.c.FS.OpenFile(full, 0, 0)
		if err != nil {
			return g.fatal("%v", err)
		}
		data[i], err = io.ReadAll(f)
		f.Close()
		if err != nil {
			return g.fatal("%v", err)
		}
	}
	if null[0] && null[1] {
		return 0
	}
	name := func(p string) string { return strings.TrimLeft(p, "/") }
	fc := gitFileChange{oldPath: name(paths[0]), newPath: name(paths[1]), oldMode: mode[0], newMode: mode[1],
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
		return 0
	}
	if quiet {
		return 1
	}
	w := bufio.NewWriter(g.c.Stdout)
	defer w.Flush()
	shown := fc.newPath
	if fc.oldPath != fc.newPath {
		shown = gitRenameName(fc.oldPath, fc.newPath)
	}
	chs := []gitFileChange{fc}
	if numstat {
		a, d := g.numstat(ctx, &fc)
		if a < 0 {
			fmt.Fprintf(w, "-\t-\t%s\n", shown)
		} else {
			fmt.Fprintf(w, "%d\t%d\t%s\n", a, d, shown)
		}
	}
	switch {
	case nameOnly:
		fmt.Fprintln(w, gitQuotePath(fc.newPath))
	case nameStat:
		fmt.Fprintf(w, "%c\t%s\n", fc.status, gitQuotePath(fc.oldPath))
	case stat:
		rows := g.statRows(ctx, chs)
		rows[0].name = shown
		gitWriteStat(w, rows)
	}
	if !stat && !nameOnly && !nameStat && !numstat {
		g.writePatch(ctx, w, &fc, ctxLines)
	}
	return 1
}
