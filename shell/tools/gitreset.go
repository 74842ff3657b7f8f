package tools

import (
	"context"
	"fmt"
	"os"
	"path"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// This file implements "git reset" (--soft, --mixed, --hard, paths) and
// "git switch"/"git checkout" of branches, over one helper that moves the
// index and worktree from one tree to another.

var (
	gitResetOpts  = NewOptions("soft", "mixed", "hard", "q,quiet")
	gitSwitchOpts = NewOptions("c,create", "q,quiet")
	gitCheckOpts  = NewOptions("b", "q,quiet")
)

// moveTo makes the index (and, when worktree is set, the files) equal to
// tree to, coming from tree from. Files are written only where from and
// to differ, as git's two-way merge does for a clean tree.
func (g *gitCtx) moveTo(ctx context.Context, s *gitScan, from, to map[string]gitTreeEntry, worktree bool) error {
	var entries []*index.Entry
	old := map[string]*index.Entry{}
	for _, e := range s.idx.Entries {
		old[e.Name] = e
	}
	for p, te := range to {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e := &index.Entry{Name: p, Hash: te.hash, Mode: filemode.FileMode(te.mode)}
		if oe, ok := old[p]; ok && oe.Hash == te.hash && oe.Mode == e.Mode && (!worktree || s.unstaged[p] == 0) {
			entries = append(entries, oe)
			continue
		}
		if worktree {
			// A staged mode change leaves the file's mode as the index
			// has it: it is written again too.
			if fe, ok := from[p]; !ok || fe != te || s.unstaged[p] != 0 || old[p] == nil || old[p].Hash != te.hash || old[p].Mode != e.Mode {
				if err := g.checkoutFile(p, te); err != nil {
					return err
				}
			}
			if fi, err := g.c.FS.Lstat(g.top + "/" + p); err == nil {
				ne, err := g.statEntry(p, te.hash, fi)
				if err == nil {
					e = ne
				}
			}
		}
		entries = append(entries, e)
	}
	if worktree {
		for _, e := range s.idx.Entries {
			if _, ok := to[e.Name]; !ok {
				g.removeFile(e.Name)
			}
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	s.idx.Entries = entries
	return g.saveIndex(s.idx)
}

// checkoutFile writes te's blob at repository path p in the worktree,
// replacing what is there, with the mode git gives it (0644 or 0755, or
// a symlink).
func (g *gitCtx) checkoutFile(p string, te gitTreeEntry) error {
	data, err := g.blob(te.hash)
	if err != nil {
		return err
	}
	full := g.top + "/" + p
	g.c.FS.Remove(full)
	if err := g.mkdirs(path.Dir(full)); err != nil {
		return err
	}
	if te.mode == uint32(filemode.Symlink) {
		if err := g.c.FS.Symlink(string(data), full); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		return nil
	}
	perm := os.FileMode(0o644)
	if te.mode == uint32(filemode.Executable) {
		perm = 0o755
	}
	if err := g.writeFile(full, data); err != nil {
		return err
	}
	return g.c.FS.Chmod(full, perm)
}

// removeFile removes repository path p from the worktree and then its
// parent directories that are left empty, as git does when a checkout
// deletes a file.
func (g *gitCtx) removeFile(p string) {
	g.c.FS.Remove(g.top + "/" + p)
	for d := path.Dir(p); d != "." && d != ""; d = path.Dir(d) {
		if g.c.FS.Remove(g.top+"/"+d) != nil {
			break
		}
	}
}

func (g *gitCtx) mkdirs(dir string) error {
	if dir == g.top || dir == "/" {
		return nil
	}
	if fi, err := g.c.FS.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	if err := g.mkdirs(path.Dir(dir)); err != nil {
		return err
	}
	if err := g.c.FS.Mkdir(dir, 0o755); err != nil {
		if fi, err2 := g.c.FS.Stat(dir); err2 != nil || !fi.IsDir() {
			return fmt.Errorf("mkdir %s: %w", dir, err)
		}
	}
	return nil
}

// statEntry is stageFile without hashing: h is already known.
func (g *gitCtx) statEntry(p string, h plumbing.Hash, fi os.FileInfo) (*index.Entry, error) {
	e, err := g.stageFileInfo(p, fi)
	if err != nil {
		return nil, err
	}
	e.Hash = h
	return e, nil
}

// gitReset is "git reset [--soft|--mixed|--hard] [commit]" and
// "git reset [commit] -- paths".
func gitReset(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	mode, quiet := "mixed", false
	for _, o := range opts {
		switch o.Key {
		case "soft", "mixed", "hard":
			mode = o.Key
		case "quiet":
			quiet = true
		}
	}
	branch, head, detached, err := g.headRef()
	if err != nil {
		return g.fatal("%v", err)
	}
	target := head
	var paths []string
	for i, a := range args {
		if a == "--" {
			for _, p := range args[i+1:] {
				sp, ok := g.pathspec(p)
				if !ok {
					return g.fatal("%s: '%s' is outside repository at '%s'", p, p, g.top)
				}
				paths = append(paths, sp)
			}
			break
		}
		if i == 0 {
			if h, ok := g.resolveRev(a); ok {
				target = h
				continue
			}
		}
		if _, err := g.c.FS.Lstat(gitAbsFrom(g.dir, a)); err != nil {
			return g.fatal("ambiguous argument '%s': unknown revision or path not in the working tree.\nUse '--' to separate paths from revisions, like this:\n'git <command> [<revision>...] -- [<file>...]'", a)
		}
		sp, _ := g.pathspec(a)
		paths = append(paths, sp)
	}
	if target.IsZero() {
		return g.c.Fail("git reset on an unborn branch")
	}
	s, err := g.scanHead(ctx, "no")
	if err != nil {
		return g.fatal("%v", err)
	}
	to, err := g.flatTree(target)
	if err != nil {
		return g.fatal("%v", err)
	}
	if len(paths) > 0 {
		if mode != "mixed" {
			return g.fatal("Cannot do %s reset with paths.", mode)
		}
		for _, p := range paths {
			for _, e := range append([]*index.Entry(nil), s.idx.Entries...) {
				if gitUnder(e.Name, p) {
					gitRemoveEntry(s.idx, e.Name)
				}
			}
			for q, te := range to {
				if gitUnder(q, p) {
					gitSetEntry(s.idx, &index.Entry{Name: q, Hash: te.hash, Mode: filemode.FileMode(te.mode)})
				}
			}
		}
		if err := g.saveIndex(s.idx); err != nil {
			return g.fatal("%v", err)
		}
		return g.resetReport(ctx, quiet)
	}
	if mode != "soft" {
		if err := g.moveTo(ctx, s, s.head, to, mode == "hard"); err != nil {
			return g.fatal("%v", err)
		}
	}
	ref := branch
	if detached {
		ref = plumbing.HEAD
	}
	if err := g.st.SetReference(plumbing.NewHashReference(ref, target)); err != nil {
		return g.fatal("%v", err)
	}
	switch mode {
	case "hard":
		if !quiet {
			cm, err := g.commitSubject(target)
			if err != nil {
				return g.fatal("%v", err)
			}
			fmt.Fprintf(g.c.Stdout, "HEAD is now at %s %s\n", g.short(target), cm)
		}
	case "mixed":
		return g.resetReport(ctx, quiet)
	}
	return 0
}

// resetReport prints "Unstaged changes after reset:" as mixed reset does.
func (g *gitCtx) resetReport(ctx context.Context, quiet bool) int {
	if quiet {
		return 0
	}
	s, err := g.scanHead(ctx, "no")
	if err != nil {
		return g.fatal("%v", err)
	}
	var ps []string
	for p := range s.unstaged {
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return 0
	}
	sort.Strings(ps)
	fmt.Fprintln(g.c.Stdout, "Unstaged changes after reset:")
	for _, p := range ps {
		fmt.Fprintf(g.c.Stdout, "%c\t%s\n", s.unstaged[p], p)
	}
	return 0
}

// gitSwitch is "git switch [-c] branch" and "git checkout [-b] branch".
func gitSwitch(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	create, quiet := false, false
	for _, o := range opts {
		switch o.Key {
		case "create", "b":
			create = true
		case "quiet":
			quiet = true
		}
	}
	if len(args) != 1 || args[0] == "--" {
		return g.c.Fail("git " + g.sub + " with these arguments (paths or start points)")
	}
	name := args[0]
	_, head, _, err := g.headRef()
	if err != nil {
		return g.fatal("%v", err)
	}
	names, hashes := g.refNames("refs/heads/")
	_ = names
	target, exists := hashes[name]
	switch {
	case create && exists:
		return g.fatal("a branch named '%s' already exists", name)
	case create:
		if head.IsZero() {
			return g.c.Fail("git " + g.sub + " -c on an unborn branch")
		}
		if !gitValidRefName(name) {
			return g.fatal("'%s' is not a valid branch name", name)
		}
		target = head
	case !exists:
		if g.sub == "switch" {
			return g.fatal("invalid reference: %s", name)
		}
		return g.c.Fail("git checkout of a path or commit")
	}
	s, err := g.scanHead(ctx, "no")
	if err != nil {
		return g.fatal("%v", err)
	}
	if target != head {
		to, err := g.flatTree(target)
		if err != nil {
			return g.fatal("%v", err)
		}
		for p := range s.staged {
			if to[p] != s.head[p] {
				return g.c.Fail("git " + g.sub + " over local changes")
			}
		}
		for p := range s.unstaged {
			if to[p] != s.head[p] {
				return g.c.Fail("git " + g.sub + " over local changes")
			}
		}
		if len(s.staged) > 0 || len(s.unstaged) > 0 {
			return g.c.Fail("git " + g.sub + " carrying local changes")
		}
		if err := g.moveTo(ctx, s, s.head, to, true); err != nil {
			return g.fatal("%v", err)
		}
	}
	ref := plumbing.NewBranchReferenceName(name)
	if create {
		if err := g.st.SetReference(plumbing.NewHashReference(ref, target)); err != nil {
			return g.fatal("%v", err)
		}
	}
	cur, _, _, _ := g.headRef()
	if err := g.st.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, ref)); err != nil {
		return g.fatal("%v", err)
	}
	if quiet {
		return 0
	}
	switch {
	case create:
		fmt.Fprintf(g.c.Stderr, "Switched to a new branch '%s'\n", name)
	case cur == ref:
		fmt.Fprintf(g.c.Stderr, "Already on '%s'\n", name)
	default:
		fmt.Fprintf(g.c.Stderr, "Switched to branch '%s'\n", name)
	}
	return 0
}

func (g *gitCtx) commitSubject(h plumbing.Hash) (string, error) {
	cm, err := object.GetCommit(g.st, h)
	if err != nil {
		return "", err
	}
	return gitSubject(cm.Message), nil
}
