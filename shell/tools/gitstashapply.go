package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// This file implements "git stash apply" and "git stash pop". Git merges
// the stash's worktree tree into the index's tree, taking the commit the
// stash was made on as the base. Served here is the case where that merge
// is trivial: the index's tree is still the base (nothing staged, HEAD
// where it was or on the same tree), so the result is the stash's tree,
// and the files it changes are clean or missing in the worktree, with no
// untracked file in the way. Anything else (a real three-way merge,
// conflicts, local changes git would refuse to overwrite) is refused
// before the first write and runs in a container.

// gitStashApply is "git stash apply|pop [--index] [-q] [stash]".
func gitStashApply(ctx context.Context, g *gitCtx, pop bool, opts []Opt, args []string) int {
	withIndex, quiet := gitHasOpt(opts, "index"), gitHasOpt(opts, "quiet")
	e, code := g.stashEntry(args, !pop)
	if e == nil {
		return code
	}
	plan, err := g.planStashApply(ctx, e, withIndex)
	if errors.Is(err, errGitRefuse) {
		action := "apply"
		if pop {
			action = "pop"
		}
		return g.c.Fail("git stash " + action + ": " + gitRefusal(err))
	}
	if err != nil {
		return g.fatal("%v", err)
	}
	if e.wTree == e.bTree {
		// merge_recursive's message, printed whatever the verbosity.
		fmt.Fprintln(g.c.Stdout, "Already up to date.")
	}
	if err := g.runStashApply(plan); err != nil {
		return g.fatal("%v", err)
	}
	if !quiet {
		if code := gitStatus(ctx, g, nil, nil); code != 0 {
			return code
		}
	}
	if pop {
		return g.dropStash(e, quiet)
	}
	return 0
}

// gitStashPlan is an apply decided but not done: the files to write and
// remove, the untracked files to restore and the index to save.
type gitStashPlan struct {
	write     map[string]gitTreeEntry
	remove    []string
	untracked map[string]gitTreeEntry
	idx       *index.Index
}

// planStashApply checks that applying e is the trivial merge (see the
// file comment) and returns what to do; errGitRefuse when it is not.
func (g *gitCtx) planStashApply(ctx context.Context, e *gitStashEntry, withIndex bool) (*gitStashPlan, error) {
	s, err := g.scanHead(ctx, "no")
	if err != nil {
		return nil, err
	}
	if why := gitStashUnsupportedIndex(s.idx); why != "" {
		return nil, fmt.Errorf("%w: %s", errGitRefuse, why)
	}
	if gitBuildTrees(s.idx.Entries, false).hash != e.bTree {
		return nil, fmt.Errorf("%w: the index is not the stash's base (needs a merge)", errGitRefuse)
	}
	base, err := g.flatTreeOf(e.bTree)
	if err != nil {
		return nil, err
	}
	wFiles, err := g.flatTreeOf(e.wTree)
	if err != nil {
		return nil, err
	}
	uFiles := map[string]gitTreeEntry{}
	if e.hasU {
		if uFiles, err = g.flatTreeOf(e.uTree); err != nil {
			return nil, err
		}
	}
	if gitDirFileClash(base, wFiles, uFiles) {
		return nil, fmt.Errorf("%w: a file and a directory swap places", errGitRefuse)
	}
	plan := &gitStashPlan{write: map[string]gitTreeEntry{}, untracked: uFiles}
	for _, ch := range gitTreeChanges(base, wFiles, false) {
		p := ch.newPath
		if err := g.stashTarget(p, s, ch.status != 'A'); err != nil {
			return nil, err
		}
		if ch.status == 'D' {
			plan.remove = append(plan.remove, p)
		} else {
			plan.write[p] = wFiles[p]
		}
	}
	for p := range uFiles {
		if _, ok := wFiles[p]; ok {
			return nil, fmt.Errorf("%w: restoring untracked %s over a stashed file", errGitRefuse, p)
		}
		if _, ok := base[p]; ok {
			return nil, fmt.Errorf("%w: restoring untracked %s over a tracked file", errGitRefuse, p)
		}
		if err := g.stashTarget(p, s, false); err != nil {
			return nil, err
		}
	}
	sort.Strings(plan.remove)
	changed := map[string]bool{}
	for _, p := range plan.remove {
		changed[p] = true
	}
	for p := range plan.write {
		changed[p] = true
	}
	if plan.idx, err = g.stashApplyIndex(e, s, wFiles, changed, withIndex); err != nil {
		return nil, err
	}
	return plan, nil
}

// stashTarget checks that the apply may write or remove worktree path p:
// a tracked file must be unchanged or gone (git refuses to overwrite
// local changes), an untracked one absent, and no file may stand where a
// parent directory goes.
func (g *gitCtx) stashTarget(p string, s *gitScan, tracked bool) error {
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		fi, err := g.c.FS.Lstat(g.top + "/" + d)
		if err == nil && !fi.IsDir() {
			return fmt.Errorf("%w: %s is in the way of %s", errGitRefuse, d, p)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("stat %s: %w", d, err)
		}
	}
	fi, err := g.lstatWork(p)
	if err != nil {
		return err
	}
	switch {
	case fi == nil:
		return nil
	case !tracked:
		return fmt.Errorf("%w: untracked %s in the way", errGitRefuse, p)
	case s.unstaged[p] != 0:
		return fmt.Errorf("%w: local changes to %s", errGitRefuse, p)
	}
	return nil
}

// stashApplyIndex is the index after the apply. Without --index, git
// leaves the index as it was (the base) but for files the stash adds,
// which stay added; with --index it is the stash's index tree.
// changed holds the paths the apply writes or removes.
func (g *gitCtx) stashApplyIndex(e *gitStashEntry, s *gitScan, wFiles map[string]gitTreeEntry, changed map[string]bool, withIndex bool) (*index.Index, error) {
	target := gitIndexFiles(s.idx)
	if withIndex && e.iTree != e.bTree {
		// Git applies the stash's index diff to the index reset to HEAD.
		cm, err := object.GetCommit(g.st, s.headHash)
		if err != nil || cm.TreeHash != e.bTree {
			return nil, fmt.Errorf("%w: --index with HEAD not on the stash's base", errGitRefuse)
		}
		if target, err = g.flatTreeOf(e.iTree); err != nil {
			return nil, err
		}
	} else {
		for p, te := range wFiles {
			if _, ok := target[p]; !ok {
				target[p] = te
			}
		}
	}
	if gitMayPairInexact(gitTreeChanges(s.head, target, true)) {
		return nil, fmt.Errorf("%w: added and deleted files left staged (git status may pair them as a rename)", errGitRefuse)
	}
	old := map[string]*index.Entry{}
	for _, x := range s.idx.Entries {
		old[x.Name] = x
	}
	idx := &index.Index{Version: s.idx.Version, Cache: s.idx.Cache}
	for p, te := range target {
		// A file the apply rewrites keeps no stale stat data.
		_, rewritten := changed[p]
		if x := old[p]; x != nil && x.Hash == te.hash && uint32(x.Mode) == te.mode && !rewritten {
			idx.Entries = append(idx.Entries, x)
			continue
		}
		// No stat data: the next scan hashes the file, as git's entries
		// made by unstage_changes_unless_new have none.
		idx.Entries = append(idx.Entries, &index.Entry{Name: p, Hash: te.hash, Mode: filemode.FileMode(te.mode)})
	}
	return idx, nil
}

// runStashApply does a plan.
func (g *gitCtx) runStashApply(plan *gitStashPlan) error {
	for _, p := range plan.remove {
		g.removeFile(p)
	}
	for _, files := range []map[string]gitTreeEntry{plan.write, plan.untracked} {
		ps := make([]string, 0, len(files))
		for p := range files {
			ps = append(ps, p)
		}
		sort.Strings(ps)
		for _, p := range ps {
			if err := g.checkoutFile(p, files[p]); err != nil {
				return err
			}
		}
	}
	return g.saveIndex(plan.idx)
}

// gitDirFileClash reports whether a path of one set is a directory of a
// path in another (or the same): a file that becomes a directory or the
// reverse.
func gitDirFileClash(sets ...map[string]gitTreeEntry) bool {
	dirs := map[string]bool{}
	for _, m := range sets {
		for p := range m {
			for d := path.Dir(p); d != "."; d = path.Dir(d) {
				dirs[d] = true
			}
		}
	}
	for _, m := range sets {
		for p := range m {
			if dirs[p] {
				return true
			}
		}
	}
	return false
}
