package tools

import (
	"bufio"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// This file reads the revisions of log and rev-list (A, A..B, A...B,
// ^A, --all) and walks the commits they select, newest committer date
// first as git's default order. Git's walk with excluded commits
// (limit_list) stops marking them once only excluded commits older than
// the last one shown are left: exact when no commit is newer than its
// child, so such a walk with a skewed clock is refused.

// gitRevWalk is where a walk starts and what it excludes.
type gitRevWalk struct {
	pos   []plumbing.Hash
	neg   []plumbing.Hash    // ^A and the A of A..B
	sym   [][2]plumbing.Hash // A...B
	paths []string
}

// limited reports whether the walk excludes commits.
func (rw *gitRevWalk) limited() bool { return len(rw.neg)+len(rw.sym) > 0 }

// parseRevWalk separates revisions from paths (after "--", or once an
// argument is not a revision but exists as a file), as git's
// setup_revisions does.
func (g *gitCtx) parseRevWalk(args []string) (*gitRevWalk, int) {
	rw := &gitRevWalk{}
	ambiguous := func(a string) int {
		fmt.Fprintf(g.c.Stderr, "fatal: ambiguous argument '%s': unknown revision or path not in the working tree.\n"+
			"Use '--' to separate paths from revisions, like this:\n'git <command> [<revision>...] -- [<file>...]'\n", a)
		return 128
	}
	head := func(s string) string {
		if s == "" {
			return "HEAD"
		}
		return s
	}
	for i, a := range args {
		if a == "--" {
			for _, p := range args[i+1:] {
				sp, ok := g.pathspec(p)
				if !ok {
					return nil, g.fatal("%s: '%s' is outside repository at '%s'", p, p, g.top)
				}
				rw.paths = append(rw.paths, sp)
			}
			return rw, 0
		}
		if len(rw.paths) == 0 {
			if l, r, ok := strings.Cut(a, "..."); ok && a != "..." {
				lh, lok := g.resolveRev(head(l))
				rh, rok := g.resolveRev(head(r))
				if lok && rok {
					rw.sym = append(rw.sym, [2]plumbing.Hash{lh, rh})
					continue
				}
			} else if l, r, ok := strings.Cut(a, ".."); ok && a != ".." {
				lh, lok := g.resolveRev(head(l))
				rh, rok := g.resolveRev(head(r))
				if lok && rok {
					rw.neg, rw.pos = append(rw.neg, lh), append(rw.pos, rh)
					continue
				}
			} else if n, ok := strings.CutPrefix(a, "^"); ok {
				h, ok := g.resolveRev(n)
				if !ok {
					return nil, g.fatal("bad revision '%s'", a)
				}
				rw.neg = append(rw.neg, h)
				continue
			} else if h, ok := g.resolveRev(a); ok {
				rw.pos = append(rw.pos, h)
				continue
			}
		}
		if _, err := g.c.FS.Lstat(gitAbsFrom(g.dir, a)); err != nil {
			return nil, ambiguous(a)
		}
		sp, ok := g.pathspec(a)
		if !ok {
			return nil, g.fatal("%s: '%s' is outside repository at '%s'", a, a, g.top)
		}
		rw.paths = append(rw.paths, sp)
	}
	return rw, 0
}

// addAll adds what every ref under refs/ points at (peeled), in name
// order, then HEAD, as git's --all: with equal dates the walk keeps that
// order.
func (g *gitCtx) addAll(rw *gitRevWalk) {
	var refs []*plumbing.Reference
	if iter, err := g.st.IterReferences(); err == nil {
		iter.ForEach(func(r *plumbing.Reference) error {
			if !strings.HasPrefix(string(r.Name()), "refs/") {
				return nil
			}
			if r.Type() == plumbing.SymbolicReference {
				// Listed at its own name, where it points.
				t, err := storer.ResolveReference(g.st, r.Name())
				if err != nil {
					return nil
				}
				r = plumbing.NewHashReference(r.Name(), t.Hash())
			}
			refs = append(refs, r)
			return nil
		})
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].Name() < refs[j].Name() })
	for _, r := range refs {
		rw.pos = append(rw.pos, g.peel(r.Hash()))
	}
	if _, h, _, err := g.headRef(); err == nil && !h.IsZero() {
		rw.pos = append(rw.pos, h)
	}
}

// peel follows annotated tags to what they tag.
func (g *gitCtx) peel(h plumbing.Hash) plumbing.Hash {
	for range 10 {
		t, err := object.GetTag(g.st, h)
		if err != nil {
			break
		}
		h = t.Target
	}
	return h
}

// excluded returns the commits a limited walk leaves out: the ancestors
// of every negative revision, and the common ancestors of each A...B.
// skewed is true when some commit reached is older than a parent.
func (g *gitCtx) excluded(ctx context.Context, rw *gitRevWalk) (ex map[plumbing.Hash]bool, skewed bool, err error) {
	ex = map[plumbing.Hash]bool{}
	walk := func(starts []plumbing.Hash) (map[plumbing.Hash]bool, error) {
		return g.walkAncestors(ctx, starts, func(cm *object.Commit) error {
			for _, p := range cm.ParentHashes {
				pc, err := object.GetCommit(g.st, p)
				if err != nil {
					return fmt.Errorf("read commit %s: %w", p, err)
				}
				if pc.Committer.When.After(cm.Committer.When) {
					skewed = true
				}
			}
			return nil
		})
	}
	if len(rw.neg) > 0 {
		if ex, err = walk(rw.neg); err != nil {
			return nil, false, err
		}
	}
	for _, s := range rw.sym {
		a, err := walk(s[:1])
		if err != nil {
			return nil, false, err
		}
		b, err := walk(s[1:])
		if err != nil {
			return nil, false, err
		}
		for h := range a {
			if b[h] {
				ex[h] = true
			}
		}
	}
	return ex, skewed, nil
}

// walkCommits lists the commits lo selects from rw, in git's order.
func (g *gitCtx) walkCommits(ctx context.Context, rw *gitRevWalk, lo *gitLogSettings) ([]*object.Commit, int) {
	starts := append([]plumbing.Hash(nil), rw.pos...)
	for _, s := range rw.sym {
		starts = append(starts, s[0], s[1])
	}
	var ex map[plumbing.Hash]bool
	if rw.limited() {
		var skewed bool
		var err error
		if ex, skewed, err = g.excluded(ctx, rw); err != nil {
			return nil, g.fatal("%v", err)
		}
		if skewed {
			return nil, g.c.Fail("git " + g.sub + " of a range whose history has a commit older than its parent (git's walk may differ)")
		}
	}
	f := lo.filter
	if f == nil {
		f = &gitLogFilter{}
	}
	seen := map[plumbing.Hash]bool{}
	var queue []*object.Commit
	// push queues h unless seen or excluded (then it returns nil).
	push := func(h plumbing.Hash) (*object.Commit, error) {
		if seen[h] || ex[h] {
			return nil, nil
		}
		seen[h] = true
		cm, err := object.GetCommit(g.st, h)
		if err != nil {
			return nil, err
		}
		queue = append(queue, cm)
		return cm, nil
	}
	for _, h := range starts {
		if _, err := push(h); err != nil {
			return nil, g.fatal("%v", err)
		}
	}
	var list []*object.Commit
	for len(queue) > 0 {
		if ctx.Err() != nil {
			return nil, 130
		}
		sort.SliceStable(queue, func(i, j int) bool { return queue[i].Committer.When.After(queue[j].Committer.When) })
		cm := queue[0]
		queue = queue[1:]
		// As git's walk without limiting: a commit older than --since
		// ends its line of history (its parents are not queued).
		if f.since != 0 && cm.Committer.When.Unix() < f.since {
			continue
		}
		parents := cm.ParentHashes
		if lo.firstParent && len(parents) > 1 {
			parents = parents[:1]
		}
		// With paths, a merge whose tree is the same as a parent's there
		// is not shown, and only that parent is followed (git's history
		// simplification); a commit is shown when it changes them.
		changed := true
		if len(rw.paths) > 0 {
			if len(parents) > 1 && rw.limited() {
				return nil, g.c.Fail("git " + g.sub + " of a range with paths through a merge (history simplification)")
			}
			var err error
			if changed, parents, err = g.pathsChanged(cm, parents, rw.paths); err != nil {
				return nil, g.fatal("%v", err)
			}
		}
		// An excluded parent is not walked.
		for _, p := range parents {
			pc, err := push(p)
			if err == nil && pc == nil && rw.limited() {
				pc, err = object.GetCommit(g.st, p)
			}
			if err != nil {
				return nil, g.fatal("%v", err)
			}
			if pc != nil && rw.limited() && pc.Committer.When.After(cm.Committer.When) {
				return nil, g.c.Fail("git " + g.sub + " of a range whose history has a commit older than its parent (git's walk may differ)")
			}
		}
		if !changed {
			continue
		}
		if lo.merges > 0 && len(cm.ParentHashes) < 2 || lo.merges < 0 && len(cm.ParentHashes) > 1 {
			continue
		}
		if !f.keepDate(cm) || !f.matchMessage(cm) {
			continue
		}
		if f.pickaxe != "" {
			// git runs the pickaxe on the diff it would show, and a
			// merge has none by default.
			if len(cm.ParentHashes) > 1 {
				continue
			}
			chs, err := g.commitChanges(cm, rw.paths)
			if err != nil {
				return nil, g.fatal("%v", err)
			}
			kept, refuse, err := g.pickaxeFilter(f, chs)
			if err != nil {
				return nil, g.fatal("%v", err)
			}
			if refuse {
				return nil, g.c.Fail("git log -S on commit " + g.short(cm.Hash) + " (an added and a deleted file git may pair as a rename)")
			}
			if len(kept) == 0 {
				continue
			}
		}
		list = append(list, cm)
		if lo.max >= 0 && len(list) >= lo.max && !lo.reverse {
			break
		}
	}
	if lo.max >= 0 && len(list) > lo.max {
		list = list[:lo.max]
	}
	if lo.reverse {
		for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
			list[i], list[j] = list[j], list[i]
		}
	}
	return list, 0
}

var gitRevListOpts = NewOptions("count", "n,max-count=", "reverse", "all", "first-parent", "merges", "no-merges",
	"since=", "after=", "until=", "before=", "grep=", "author=", "committer=", "i,regexp-ignore-case",
	"E,extended-regexp", "F,fixed-strings", "basic-regexp", "all-match", "invert-grep")

// gitRevList is "git rev-list": the commits log would show, one full
// name a line, or their number with --count.
func gitRevList(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	lo := &gitLogSettings{max: -1}
	count := false
	for _, o := range opts {
		switch o.Key {
		case "count":
			count = true
		case "max-count":
			lo.max = gitAtoi(o.Value)
		case "reverse":
			lo.reverse = true
		case "all":
			lo.all = true
		case "first-parent":
			lo.firstParent = true
		case "merges":
			lo.merges = 1
		case "no-merges":
			lo.merges = -1
		}
	}
	rw, code := g.logWalk(opts, args, lo)
	if code != 0 {
		return code
	}
	if len(rw.pos)+len(rw.sym) == 0 && !rw.limited() && !lo.all {
		fmt.Fprintln(g.c.Stderr, "usage: git rev-list [<options>] <commit>... [--] [<path>...]")
		return 129
	}
	list, code := g.walkCommits(ctx, rw, lo)
	if code != 0 {
		return code
	}
	w := bufio.NewWriter(g.c.Stdout)
	defer w.Flush()
	if count {
		fmt.Fprintln(w, len(list))
		return 0
	}
	for _, cm := range list {
		fmt.Fprintln(w, cm.Hash.String())
	}
	return 0
}

// pathsChanged reports whether cm changes paths against parents (all of
// them for a merge); for a merge the same as one parent there, that
// parent alone is returned, to be followed.
func (g *gitCtx) pathsChanged(cm *object.Commit, parents []plumbing.Hash, paths []string) (bool, []plumbing.Hash, error) {
	newT, err := g.flatTreeOf(cm.TreeHash)
	if err != nil {
		return false, nil, err
	}
	newT = gitFilterPaths(newT, paths)
	if len(parents) == 0 {
		return len(newT) > 0, parents, nil
	}
	for _, p := range parents {
		oldT, err := g.flatTree(p)
		if err != nil {
			return false, nil, err
		}
		if len(gitTreeChanges(gitFilterPaths(oldT, paths), newT, false)) == 0 {
			return false, []plumbing.Hash{p}, nil
		}
	}
	return true, parents, nil
}
