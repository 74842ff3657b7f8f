package tools

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/index"
	"golang.org/x/sys/unix"
)

// This file implements "git add" and "git rm" and the index helpers they
// share with commit -a.

var (
	gitAddOpts = NewOptions("A,all", "u,update", "v,verbose", "f,force", "n,dry-run", "no-all", "ignore-removal")
	gitRmOpts  = NewOptions("cached", "r", "f,force", "q,quiet", "n,dry-run")
)

// stageFile hashes worktree path p into the object store and returns an
// index entry carrying its stat data.
func (g *gitCtx) stageFile(p string, fi fs.FileInfo) (*index.Entry, error) {
	data, err := g.readWork(p, fi)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	h, err := g.writeBlob(data)
	if err != nil {
		return nil, err
	}
	e, _ := g.stageFileInfo(p, fi)
	e.Hash = h
	return e, nil
}

// stageFileInfo builds an index entry (without hash) from stat data.
func (g *gitCtx) stageFileInfo(p string, fi fs.FileInfo) (*index.Entry, error) {
	e := &index.Entry{Name: p, Mode: gitWorktreeMode(fi)}
	gitSetStat(e, fi)
	return e, nil
}

// gitSetStat records fi's stat data in e.
func gitSetStat(e *index.Entry, fi fs.FileInfo) {
	e.Size, e.ModifiedAt = uint32(fi.Size()), fi.ModTime()
	if st, ok := fi.Sys().(*unix.Stat_t); ok {
		e.CreatedAt = time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
		e.Dev, e.Inode, e.UID, e.GID = uint32(st.Dev), uint32(st.Ino), st.Uid, st.Gid
	}
}

// gitSetEntry replaces or inserts e in idx.
func gitSetEntry(idx *index.Index, e *index.Entry) {
	for i, x := range idx.Entries {
		if x.Name == e.Name {
			idx.Entries[i] = e
			return
		}
	}
	idx.Entries = append(idx.Entries, e)
}

// gitRemoveEntry drops path p from idx.
func gitRemoveEntry(idx *index.Index, p string) {
	out := idx.Entries[:0]
	for _, x := range idx.Entries {
		if x.Name != p {
			out = append(out, x)
		}
	}
	idx.Entries = out
}

// gitUnder reports whether repository path p is spec or below it.
func gitUnder(p, spec string) bool {
	return spec == "" || p == spec || strings.HasPrefix(p, spec+"/")
}

// stageChanges records worktree changes of paths gitUnder specs into the
// index: modified and deleted tracked files, and untracked ones when
// untracked is set.
func (g *gitCtx) stageChanges(s *gitScan, specs []string, untracked bool) error {
	match := func(p string) bool {
		for _, sp := range specs {
			if gitUnder(p, sp) {
				return true
			}
		}
		return false
	}
	var paths []string
	for p := range s.unstaged {
		if match(p) {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		if s.unstaged[p] == 'D' {
			gitRemoveEntry(s.idx, p)
			continue
		}
		e, err := g.stageFile(p, s.wt[p])
		if err != nil {
			return err
		}
		gitSetEntry(s.idx, e)
	}
	if untracked {
		for _, p := range s.untracked {
			if !match(p) || s.wt[p] == nil {
				continue
			}
			e, err := g.stageFile(p, s.wt[p])
			if err != nil {
				return err
			}
			gitSetEntry(s.idx, e)
		}
	}
	// Refresh stat data of unchanged entries so that later scans are fast.
	for _, e := range s.idx.Entries {
		if fi, ok := s.wt[e.Name]; ok && s.unstaged[e.Name] == 0 && match(e.Name) {
			gitSetStat(e, fi)
		}
	}
	return nil
}

// gitAdd is "git add [-A|-u] [pathspec...]".
func gitAdd(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	all, update := false, false
	for _, o := range opts {
		switch o.Key {
		case "all":
			all = true
		case "update":
			update = true
		default:
			return g.c.Fail("git add " + o.Name)
		}
	}
	if len(args) == 0 && !all && !update {
		fmt.Fprintln(g.c.Stderr, "Nothing specified, nothing added.\nhint: Maybe you wanted to say 'git add .'?")
		return 0
	}
	var specs []string
	for _, a := range args {
		if strings.ContainsAny(a, "*?[") || strings.HasPrefix(a, ":") {
			return g.c.Fail("git add with a glob or magic pathspec")
		}
		sp, ok := g.pathspec(a)
		if !ok {
			return g.fatal("%s: '%s' is outside repository at '%s'", a, a, g.top)
		}
		specs = append(specs, sp)
	}
	if len(specs) == 0 {
		specs = []string{""}
		if update && !all {
			specs = []string{g.prefix()}
		}
	}
	s, err := g.scan(ctx, "all")
	if err != nil {
		return g.fatal("%v", err)
	}
	if !update {
		for i, sp := range specs {
			if sp == "" {
				continue
			}
			found := false
			for _, p := range s.untracked {
				if gitUnder(p, sp) {
					found = true
					break
				}
			}
			if !found {
				for _, e := range s.idx.Entries {
					if gitUnder(e.Name, sp) {
						found = true
						break
					}
				}
			}
			if !found {
				if fi, err := g.c.FS.Lstat(g.top + "/" + sp); err == nil && !fi.IsDir() {
					fmt.Fprintf(g.c.Stderr, "The following paths are ignored by one of your .gitignore files:\n%s\nhint: Use -f if you really want to add them.\n", path.Clean(args[i]))
					return 1
				} else if err == nil {
					continue
				}
				return g.fatal("pathspec '%s' did not match any files", args[i])
			}
		}
	}
	if err := g.stageChanges(s, specs, !update); err != nil {
		return g.fatal("%v", err)
	}
	if err := g.saveIndex(s.idx); err != nil {
		return g.fatal("%v", err)
	}
	return 0
}

// gitRm is "git rm [--cached] [-r] [-f] [-q] path...".
func gitRm(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	cached, recursive, force, quiet := false, false, false, false
	for _, o := range opts {
		switch o.Key {
		case "cached":
			cached = true
		case "r":
			recursive = true
		case "force":
			force = true
		case "quiet":
			quiet = true
		default:
			return g.c.Fail("git rm " + o.Name)
		}
	}
	if len(args) == 0 {
		fmt.Fprintln(g.c.Stderr, "usage: git rm [<options>] [--] [<file>...]")
		return 129
	}
	s, err := g.scanHead(ctx, "no")
	if err != nil {
		return g.fatal("%v", err)
	}
	var targets []string
	seen := map[string]bool{}
	for _, a := range args {
		if strings.ContainsAny(a, "*?[") {
			return g.c.Fail("git rm with a glob pathspec")
		}
		sp, ok := g.pathspec(a)
		if !ok {
			return g.fatal("%s: '%s' is outside repository at '%s'", a, a, g.top)
		}
		n := 0
		for _, e := range s.idx.Entries {
			if gitUnder(e.Name, sp) {
				if e.Name != sp && !recursive {
					return g.fatal("not removing '%s' recursively without -r", path.Clean(a))
				}
				if !seen[e.Name] {
					seen[e.Name] = true
					targets = append(targets, e.Name)
				}
				n++
			}
		}
		if n == 0 {
			return g.fatal("pathspec '%s' did not match any files", a)
		}
	}
	sort.Strings(targets)
	if !force {
		for _, p := range targets {
			stagedDiff := s.staged[p] != 0
			wtDiff := s.unstaged[p] != 0 && s.unstaged[p] != 'D'
			switch {
			case stagedDiff && wtDiff && !s.head[p].hash.IsZero():
				return g.errorf(1, "the following file has staged content different from both the\nfile and the HEAD:\n    %s\n(use -f to force removal)", p)
			case stagedDiff && !cached:
				return g.errorf(1, "the following file has changes staged in the index:\n    %s\n(use --cached to keep the file, or -f to force removal)", p)
			case wtDiff && !cached:
				return g.errorf(1, "the following file has local modifications:\n    %s\n(use --cached to keep the file, or -f to force removal)", p)
			}
		}
	}
	for _, p := range targets {
		gitRemoveEntry(s.idx, p)
		if !quiet {
			fmt.Fprintf(g.c.Stdout, "rm '%s'\n", p)
		}
	}
	if err := g.saveIndex(s.idx); err != nil {
		return g.fatal("%v", err)
	}
	if !cached {
		for _, p := range targets {
			full := g.top + "/" + p
			if err := g.c.FS.Remove(full); err != nil {
				continue
			}
			// Remove directories left empty, as git does.
			for d := path.Dir(p); d != "." && d != ""; d = path.Dir(d) {
				if g.c.FS.Remove(g.top+"/"+d) != nil {
					break
				}
			}
		}
	}
	return 0
}
